"""False positives and detection of `hub exec ab` against two sequential profiles + `hub runs
compare`, under a noisy neighbour (run on demand, not in CI).

A background process started here burns CPU in random on/off bursts for the whole bench. Each
trial runs (a) a model against an identical copy and (b) against a model with ~5 % more work (one
more MatMul in a chain of ``--length``), with both methods, in the same run:

- ab: ``hub exec ab onnxruntime A B --rounds N --json``; a "difference" is a significant
  verdict, a detection one that says B is slower;
- sequential: ``hub exec profile`` of A, then of B, then ``hub runs compare A B --json``; a
  "difference" is a significant median delta, a detection a significant positive one.

Both use the same ``--min-effect``. Prints the false-positive rate on (a) and the detection rate
on (b) for each method (and ``--json``). Needs the ONNX Runtime image (``hub images build
onnxruntime``).

    python benchmarks/bench_ab.py [--trials 20] [--rounds 30] [--length 20] [--min-effect 2%]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
from agent_models import matmul_chain  # the A/B tests' model, one builder for both

HUB = str(Path(sys.executable).with_name("hub"))
NEIGHBOUR_TEMPLATE = """
import random, time
rng = random.Random({seed})
while True:
    end = time.monotonic() + rng.uniform(0.05, 0.4)
    if rng.random() < 0.5:
        while time.monotonic() < end:
            pass
    else:
        time.sleep(max(0.0, end - time.monotonic()))
"""
NEIGHBOUR = NEIGHBOUR_TEMPLATE.format(seed=0)


def start_neighbours(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` bursty CPU burners, each with its own seed (stop them with `stop_neighbours`)."""
    return [
        subprocess.Popen([sys.executable, "-c", NEIGHBOUR_TEMPLATE.format(seed=seed)])
        for seed in range(count)
    ]


def stop_neighbours(neighbours: list[subprocess.Popen[bytes]]) -> None:
    for neighbour in neighbours:
        neighbour.kill()
        neighbour.wait()


def hub(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, "-q", *args], cwd=project, capture_output=True, text=True, timeout=900
    )


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    if result.returncode not in (0, 5):
        raise SystemExit(f"hub failed ({result.returncode}): {result.stderr.strip()}")
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def ab_trial(project: Path, b: str, rounds: int, min_effect: str) -> dict[str, Any]:
    report = _json(
        hub(
            project,
            "exec", "ab", "onnxruntime", "base.onnx", b, "--rounds", str(rounds),
            "--set", f"min_effect={min_effect}", "--json",
        )
    )  # fmt: skip
    verdict = report["verdict"]
    return {
        "ratio": verdict["median_ratio"],
        "different": verdict["significant"],
        "slower": verdict["significant"] and verdict["median_ratio"] > 1,
    }


def sequential_trial(project: Path, b: str, runs: int, min_effect: str) -> dict[str, Any]:
    ids = []
    for model in ("base.onnx", b):
        profile = hub(
            project, "exec", "profile", "onnxruntime", model, "--set", f"runs={runs}", "--json"
        )
        ids.append(_json(profile)["run_id"])
    compared = _json(hub(project, "runs", "compare", *ids, "--min-effect", min_effect, "--json"))
    median = compared["latency"]["median"]
    different = bool(median["significant"])
    return {
        "ratio": 1 + median["delta_pct"] / 100.0,
        "different": different,
        "slower": different and median["delta_pct"] > 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--runs", type=int, default=300, help="runs of each sequential profile")
    parser.add_argument("--length", type=int, default=20, help="MatMuls in A (B has one more)")
    parser.add_argument("--min-effect", default="2%")
    parser.add_argument("--seed", type=int, default=0, help="the order of the trials' parts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    project = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    (project / "hub.toml").write_text('[project]\nname = "bench-ab"\n')
    matmul_chain(project / "base.onnx", args.length)
    shutil.copy(project / "base.onnx", project / "same.onnx")
    matmul_chain(project / "more.onnx", args.length + 1)
    os.environ.setdefault("EDGEHUB_KEEP_WARM", "600")  # both methods use the resident agent
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
    rng = random.Random(args.seed)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        "ab": {"same": [], "more": []},
        "sequential": {"same": [], "more": []},
    }
    started = time.monotonic()
    try:
        for trial in range(args.trials):
            parts = [(m, case) for m in ("ab", "sequential") for case in ("same", "more")]
            rng.shuffle(parts)  # neither method always goes first
            for method, case in parts:
                b = f"{case}.onnx"
                if method == "ab":
                    row = ab_trial(project, b, args.rounds, args.min_effect)
                else:
                    row = sequential_trial(project, b, args.runs, args.min_effect)
                results[method][case].append(row)
                print(
                    f"trial {trial + 1}/{args.trials} {method:10s} {case}: ratio "
                    f"{row['ratio']:.3f} {'different' if row['different'] else 'same'}",
                    file=sys.stderr,
                )
    finally:
        neighbour.kill()
        neighbour.wait()
        shutil.rmtree(project, ignore_errors=True)
    summary = {
        method: {
            "false_positives": sum(r["different"] for r in cases["same"]),
            "detected": sum(r["slower"] for r in cases["more"]),
            "trials": len(cases["same"]),
            "median_ratio_same": float(np.median([r["ratio"] for r in cases["same"]])),
            "median_ratio_more": float(np.median([r["ratio"] for r in cases["more"]])),
        }
        for method, cases in results.items()
    }
    summary["settings"] = dict(vars(args), seconds=round(time.monotonic() - started))
    if args.json:
        print(json.dumps({"summary": summary, "trials": results}, indent=1))
        return
    for method in ("ab", "sequential"):
        s = summary[method]
        print(
            f"{method:10s} false positives {s['false_positives']}/{s['trials']}, detected "
            f"{s['detected']}/{s['trials']} (median B/A: same {s['median_ratio_same']:.3f}, "
            f"+1 MatMul {s['median_ratio_more']:.3f})"
        )


if __name__ == "__main__":
    main()
