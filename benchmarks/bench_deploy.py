"""Figures for the tensorrt backend's `transform` (run on demand, not in CI).

For each of the onnx package's `light` models and examples/tiny_cnn.onnx: nodes before/after,
max abs output difference (ramp inputs, as ONNX's backend tests use), and host ONNX Runtime
latency before/after (median of N in-process runs, one thread, rounds interleaved).

    python benchmarks/bench_deploy.py [--runs 20] [--json]
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from edgehub.deploy import set_backend, transform
from edgehub.deploy.compare import max_abs_difference, ramp_inputs

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
EXAMPLE = Path(__file__).parents[1] / "examples" / "tiny_cnn.onnx"


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _latencies(
    before: onnx.ModelProto, after: onnx.ModelProto, feeds: dict[str, np.ndarray], runs: int
) -> tuple[float, float]:
    """Median ms of each model, runs interleaved so both see the same machine load."""
    sessions = [_session(before), _session(after)]
    names = [[i.name for i in s.get_inputs()] for s in sessions]
    times: list[list[float]] = [[], []]
    for session, inputs in zip(sessions, names, strict=True):
        session.run(None, {k: feeds[k] for k in inputs})  # warm-up
    for _ in range(runs):
        for i, (session, inputs) in enumerate(zip(sessions, names, strict=True)):
            feed = {k: feeds[k] for k in inputs}
            start = time.perf_counter()
            session.run(None, feed)
            times[i].append((time.perf_counter() - start) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    set_backend("tensorrt")
    rows = []
    for path in [*sorted(glob.glob(str(LIGHT / "*.onnx"))), str(EXAMPLE)]:
        model = onnx.load(path)
        feeds = ramp_inputs(model)
        start = time.perf_counter()
        out, report = transform(model)
        seconds = time.perf_counter() - start
        before_ms, after_ms = _latencies(model, out, feeds, args.runs)
        rows.append(
            {
                "model": Path(path).stem,
                "nodes_before": report.nodes_before,
                "nodes_after": report.nodes_after,
                "max_abs_diff": max_abs_difference(model, out, feeds),
                "ms_before": before_ms,
                "ms_after": after_ms,
                "transform_s": seconds,
                "fired": report.fired(),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    header = ("model", "nodes", "max|diff|", "ms before", "ms after", "xform s")
    print(
        f"{header[0]:<26}{header[1]:>12}{header[2]:>11}{header[3]:>11}{header[4]:>10}{header[5]:>9}"
    )
    for r in rows:
        nodes = f"{r['nodes_before']}->{r['nodes_after']}"
        print(
            f"{r['model']:<26}{nodes:>12}{r['max_abs_diff']:>11.1e}{r['ms_before']:>11.2f}"
            f"{r['ms_after']:>10.2f}{r['transform_s']:>9.1f}"
        )


if __name__ == "__main__":
    main()
