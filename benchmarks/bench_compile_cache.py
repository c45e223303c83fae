"""Benchmark the compile cache (run on demand, not in CI).

For each runtime, `hub exec compile RUNTIME MODEL` twice through the real entry point in a fresh
project: the first builds, the second reuses it (`cached_from`). Printed: both wall times (the
whole process, start-up included), the second as a fraction of the first (goal <= 5 %), and the
two runs' recorded durations. `--no-cache` times a third, building compile for comparison.

    python benchmarks/bench_compile_cache.py [--runtimes onnxruntime,tflite,tensorrt] [--model M]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_cnn.onnx"


def hub(root: Path, *args: str) -> tuple[float, dict]:
    exe = str(Path(sys.executable).with_name("hub"))
    start = time.perf_counter()
    done = subprocess.run(
        [exe, "-q", *args, "--json"], cwd=root, capture_output=True, text=True,
        env=dict(os.environ),
    )  # fmt: skip
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"hub {' '.join(args)} failed: {done.stderr.strip()[-400:]}")
    return took, json.loads(done.stdout)


def duration(root: Path, run_id: str) -> tuple[float, str | None]:
    _, shown = hub(root, "runs", "show", run_id)
    return float(shown["duration_s"]), shown["tags"].get("cached_from")


def bench(runtime: str, model: Path, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as folder:
        root = Path(folder)
        (root / "hub.toml").write_text('[project]\nname = "bench"\nstore = ".hub"\n')
        (root / model.name).write_bytes(model.read_bytes())
        args = ["exec", "compile", runtime, model.name, *extra]
        first, built = hub(root, *args)
        second, reused = hub(root, *args)
        third, _ = hub(root, *args, "--no-cache")
        run_first, _ = duration(root, built["run_id"])
        run_second, source = duration(root, reused["run_id"])
        hit = "hit" if source == built["run_id"] else "MISS"
        print(
            f"{runtime:12} first {first:7.2f} s (run {run_first:.2f} s)  second {second:5.2f} s "
            f"(run {run_second:.3f} s, {hit})  second/first {100 * second / first:5.1f} %  "
            f"runs {100 * run_second / run_first:5.2f} %  --no-cache {third:.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtimes", default="onnxruntime,tflite")
    parser.add_argument("--model", type=Path, default=EXAMPLE)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    extra = [word for pair in args.set for word in ("--set", pair)]
    for runtime in args.runtimes.split(","):
        bench(runtime, args.model.resolve(), extra)


if __name__ == "__main__":
    main()
