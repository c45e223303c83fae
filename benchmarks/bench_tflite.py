"""Benchmark the local TFLite path (run on demand, not in CI).

(a) Compile wall time: ``TFLiteCompiler(precision=...).run`` (agent, fixups, onnx2tf, the
    verification run, the mapping, the file transfers) divided by ``onnx2tf -i model.onnx -o
    out`` run directly with ``docker exec`` in the same warm container, on the same model,
    rounds interleaved. Goal <= 1.1.
(b) Profiler fidelity: ``TFLiteProfiler``'s median latency divided by the median of a bare
    LiteRT ``interpreter.invoke()`` loop timed in the same container. Goal 0.98-1.02.

Both sides run in the one container the context keeps for the tflite image, so they see the
same CPU placement; each round's two numbers are taken back to back and the figure is the
median of the per-round ratios.

    python benchmarks/bench_tflite.py [--rounds 3] [--runs 200] [--precision float32]
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ort_local import make_model

BARE = r"""
import json, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter
runs, warmup = int(sys.argv[2]), int(sys.argv[3])
it = Interpreter(model_path=sys.argv[1])
it.allocate_tensors()
detail = it.get_input_details()[0]
x = np.random.default_rng(0).standard_normal(detail["shape"]).astype(detail["dtype"])
it.set_tensor(detail["index"], x)
invoke = it.invoke
for _ in range(warmup):
    invoke()
samples = []
for _ in range(runs):
    t = time.perf_counter_ns(); invoke(); samples.append(time.perf_counter_ns() - t)
print(json.dumps({"median_ms": float(np.median(samples)) / 1e6}))
"""
SAMPLE = "calibration_image_sample_data_20x128x128x3_float32.npy"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--precision", default="float32")
    args = parser.parse_args()

    from edgehub import images
    from edgehub.core import HubContext
    from edgehub.core.compile import TFLiteCompiler
    from edgehub.core.profile import TFLiteProfiler

    image = images.require_image("tflite").tag
    work = Path(tempfile.mkdtemp(prefix="edgehub-bench-tflite-"))
    atexit.register(shutil.rmtree, work, True)  # however the bench ends
    model = work / "bench.onnx"
    make_model(model)
    (work / "bare.py").write_text(BARE)
    np.save(work / SAMPLE, np.random.default_rng(0).random((20, 128, 128, 3), dtype=np.float32))

    with HubContext(project_name="bench-tflite", artifact_base_dir=work / ".hub") as ctx:
        compiler = TFLiteCompiler(precision=args.precision)
        compiled = compiler.run(ctx, model)  # warm: container, agent zipapp, page cache
        runner = ctx.docker_runner(image)  # the container the providers use
        remote = PurePosixPath("/work/bench-direct")
        runner.run(["mkdir", "-p", str(remote)])
        for name in ("bench.onnx", "bare.py", SAMPLE):
            runner.put(work / name, remote / name)
        runner.put(compiled.path.local(), remote / "bench.tflite")
        direct = ["python3", "-m", "onnx2tf", "-i", "bench.onnx", "-o", "out", "-v", "error"]
        if args.precision == "dynamic_int8":
            direct.append("-odrqt")
        elif args.precision not in ("float32", "float16"):  # onnx2tf always writes both
            raise SystemExit("direct onnx2tf runs are set up for float32/float16/dynamic_int8")
        bare = ["python3", "bare.py", "bench.tflite", str(args.runs), str(args.warmup)]

        edge_walls, direct_walls, edge_medians, bare_medians = [], [], [], []
        for _ in range(args.rounds):
            time.sleep(0.5)
            start = time.perf_counter()
            compiler.run(ctx, model)
            edge_walls.append(time.perf_counter() - start)
            time.sleep(0.5)
            start = time.perf_counter()
            runner.run(direct, cwd=remote, hide=True)
            direct_walls.append(time.perf_counter() - start)

            profile = TFLiteProfiler(runs=args.runs, warmup=args.warmup).run(ctx, compiled)
            edge_medians.append(float(profile.latency.value))
            out = runner.run(bare, cwd=remote, hide=True)
            bare_medians.append(json.loads(out.stdout.strip().splitlines()[-1])["median_ms"])

    compile_ratio = statistics.median(e / d for e, d in zip(edge_walls, direct_walls, strict=True))
    fidelity = statistics.median(e / b for e, b in zip(edge_medians, bare_medians, strict=True))
    print(
        f"model: {model.name} (1x3x96x96 CNN), precision={args.precision}, runs={args.runs}, "
        f"warmup={args.warmup}, rounds={args.rounds}, image={image}"
    )
    print(
        f"(a) compile wall time  edgehub {statistics.median(edge_walls):.2f} s  onnx2tf direct "
        f"{statistics.median(direct_walls):.2f} s  paired ratio {compile_ratio:.3f} "
        f"(edgehub {min(edge_walls):.2f}-{max(edge_walls):.2f}, direct "
        f"{min(direct_walls):.2f}-{max(direct_walls):.2f} s)"
    )
    print(
        f"(b) median latency     edgehub {statistics.median(edge_medians):.4f} ms  bare loop "
        f"{statistics.median(bare_medians):.4f} ms  paired ratio {fidelity:.4f} "
        f"(edgehub {min(edge_medians):.3f}-{max(edge_medians):.3f}, bare "
        f"{min(bare_medians):.3f}-{max(bare_medians):.3f} ms)"
    )


if __name__ == "__main__":
    main()
