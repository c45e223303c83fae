"""`--until-stable` on a quiet machine and beside a noisy neighbour (run on demand, not in CI).

Profiles one model (a chain of MatMuls, the A/B bench's) with ``hub exec profile onnxruntime
--until-stable`` at ``--tolerance`` (default 5 %), ``--trials`` times with nothing started beside
it, then ``--trials`` times beside ``--neighbours`` processes (default: one per CPU) that burn
CPU in random on/off bursts of 0.05-0.4 s (bench_ab's neighbour, each with its own seed). Prints,
per condition, how many profiles converged, the windows each took, the last three windows'
spread and the share of the CPUs other processes took during each profile. Goal: on a quiet
machine every profile converges within 3 windows; beside the neighbour each reports that it did
not (``stable_converged`` 0, the run still finishes). Needs the ONNX Runtime image.

    python benchmarks/bench_until_stable.py [--trials 5] [--runs 500] [--neighbours N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
from agent_models import matmul_chain  # the A/B tests' model
from bench_ab import hub, start_neighbours, stop_neighbours  # the A/B bench's bursty neighbour


def profile(project: Path, runs: int, max_s: float, tolerance: str) -> dict[str, Any]:
    done = hub(project, "exec", "profile", "onnxruntime", "model.onnx", "--until-stable",
               "--stable-tolerance", tolerance, "--stable-max-s", str(max_s),
               "--set", f"runs={runs}", "--json")  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"hub exec profile failed ({done.returncode}): {done.stderr.strip()}")
    report = json.loads(done.stdout)
    metrics = report["metrics"]
    profile_json = Path(report["artifacts"]["output_file"])
    windows = json.loads(profile_json.read_text()).get("windows", [])
    return {
        "window_rows": windows,
        "other_cpu_share": float(report["environment"].get("conditions.other_cpu_share", "nan")),
        "converged": bool(metrics["stable_converged"]),
        "windows": int(metrics["stable_windows"]),
        "spread_pct": float(metrics.get("stable_spread_pct", float("nan"))),
    }


def summarise(rows: list[dict[str, Any]]) -> str:
    converged = [r for r in rows if r["converged"]]
    windows = sorted(r["windows"] for r in rows)
    spreads = sorted(round(r["spread_pct"], 2) for r in rows)
    return (
        f"converged {len(converged)}/{len(rows)}, windows {windows}, last spreads % {spreads}, "
        f"within 3 windows {sum(r['converged'] and r['windows'] <= 3 for r in rows)}/{len(rows)}, "
        f"other processes' CPU share {[round(r['other_cpu_share'], 2) for r in rows]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--runs", type=int, default=500, help="timed runs per window")
    parser.add_argument("--length", type=int, default=20, help="MatMuls in the model")
    parser.add_argument(
        "--neighbours",
        type=int,
        default=os.cpu_count() or 2,
        help="bursty CPU burners beside the noisy trials (default: one per CPU)",
    )
    parser.add_argument("--tolerance", default="5%", help="--stable-tolerance (default 5%%)")
    parser.add_argument("--max-s", type=float, default=20.0, help="--stable-max-s")
    args = parser.parse_args()

    project = Path(tempfile.mkdtemp(prefix="bench-stable-"))
    (project / "hub.toml").write_text('[project]\nname = "bench-stable"\n')
    matmul_chain(project / "model.onnx", args.length)
    os.environ.setdefault("EDGEHUB_KEEP_WARM", "600")
    results: dict[str, list[dict[str, Any]]] = {"quiet": [], "noisy": []}
    try:
        results["quiet"] = [
            profile(project, args.runs, args.max_s, args.tolerance) for _ in range(args.trials)
        ]
        neighbours = start_neighbours(args.neighbours)
        try:
            results["noisy"] = [
                profile(project, args.runs, args.max_s, args.tolerance) for _ in range(args.trials)
            ]
        finally:
            stop_neighbours(neighbours)
    finally:
        shutil.rmtree(project, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.2f} (2 cores here)")
    for condition, rows in results.items():
        print(f"{condition:6s} {summarise(rows)}")
    for row in results["quiet"]:
        if not row["converged"] or row["windows"] > 3:  # what kept a quiet profile from 3
            shown = [
                (w["median_ms"], w["mean_ms"], w.get("other_cpu_share")) for w in row["window_rows"]
            ]
            print(
                f"quiet profile of {row['windows']} windows (median, mean ms, others' share): "
                f"{shown}"
            )


if __name__ == "__main__":
    main()
