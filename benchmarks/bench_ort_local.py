"""Benchmark the local ONNX Runtime path (run on demand, not in CI).

(a) Profiler fidelity: edgehub's reported median (and p99) latency divided by that of a bare
    `session.run` loop timed in the same image (in the same warm container, so both see the
    same CPU placement), on the same model, rounds interleaved; on a fixed-shape CNN and on a
    dynamic-shape one (H, W dynamic) profiled at a realistic 1x3x320x320 (`input_shape`), a
    few ms per run.
(b) Per-job overhead: wall time of a warm `hub exec profile` (the toolchain container already
    running: EDGEHUB_KEEP_WARM) divided by `docker run --rm IMAGE python bare.py` doing the
    same work (session creation, warm-up, timed runs).

    python benchmarks/bench_ort_local.py [--rounds 5] [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BARE = r"""
import sys, time, json
import numpy as np
import onnxruntime as ort
runs, warmup = int(sys.argv[2]), int(sys.argv[3])
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
inp = sess.get_inputs()[0]
shape = [d if isinstance(d, int) else 1 for d in inp.shape]
if len(sys.argv) > 4:
    shape = [int(d) for d in sys.argv[4].split(",")]
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
feed = {inp.name: x}
for _ in range(warmup):
    sess.run(None, feed)
samples = []
for _ in range(runs):
    t = time.perf_counter_ns(); sess.run(None, feed); samples.append(time.perf_counter_ns() - t)
ms = np.array(samples) / 1e6
print(json.dumps({"median_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99))}))
"""
DYNAMIC_SHAPE = "1,3,320,320"


def make_dynamic_model(path: Path) -> None:
    """A conv net with dynamic H and W (8 channels, two 3x3 convs, ~60 M multiply-adds at
    320x320): a few ms per run on an idle core."""
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), f"w{i}")
        for i, shape in enumerate([(8, 3, 3, 3), (8, 8, 3, 3)])
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "bench_dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def make_model(path: Path) -> None:
    """A mid-sized CNN (a few ms per run on a laptop core): stable enough to time."""
    rng = np.random.default_rng(0)
    inits, nodes, prev, ch = [], [], "x", 3
    for i, out in enumerate([32, 64, 64, 128]):
        w = numpy_helper.from_array(
            (rng.standard_normal((out, ch, 3, 3)) * 0.1).astype(np.float32), f"w{i}"
        )
        inits.append(w)
        nodes.append(
            helper.make_node(
                "Conv",
                [prev, f"w{i}"],
                [f"c{i}"],
                kernel_shape=[3, 3],
                pads=[1, 1, 1, 1],
                strides=[2, 2] if i else [1, 1],
            )
        )
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        prev, ch = f"r{i}", out
    nodes.append(helper.make_node("GlobalAveragePool", [prev], ["y"]))
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 96, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, ch, 1, 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def hub(*args: str, env: dict[str, str]) -> tuple[float, dict]:
    exe = str(Path(sys.executable).with_name("hub"))
    start = time.perf_counter()
    out = subprocess.run(
        [exe, "-q", *args, "--json"], capture_output=True, text=True, env=env, check=True
    )
    return time.perf_counter() - start, json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    from edgehub import images

    image = images.require_image("onnxruntime").tag
    work = Path(tempfile.mkdtemp(prefix="edgehub-bench-"))
    model = work / "bench.onnx"
    make_model(model)
    dynamic = work / "dynamic.onnx"
    make_dynamic_model(dynamic)
    (work / "bare.py").write_text(BARE)
    work.chmod(0o755)  # the image's non-root user reads the bind mount
    env = {**os.environ, "EDGEHUB_KEEP_WARM": "600", "EDGEHUB_STORE": str(work / "store")}
    profile_args = [
        "exec",
        "profile",
        "onnxruntime",
        str(model),
        "--set",
        f"runs={args.runs}",
        "--set",
        f"burn_ins={args.warmup}",
        "--set",
        "profiling_method=python",
    ]
    hub(*profile_args, env=env)  # warm: image, agent zipapp, container
    bare_cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        "-v",
        f"{work}:/bench:ro",
        image,
        "python3",
        "/bench/bare.py",
        "/bench/bench.onnx",
        str(args.runs),
        str(args.warmup),
    ]

    warm = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=org.edgehub.warm=1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    for name in ("bare.py", "bench.onnx", "dynamic.onnx"):
        subprocess.run(["docker", "cp", str(work / name), f"{warm}:/tmp/{name}"], check=True)
    subprocess.run(["docker", "exec", "-u", "0", warm, "chmod", "644", "/tmp/bare.py",
                    "/tmp/bench.onnx", "/tmp/dynamic.onnx"], check=True)  # fmt: skip
    dynamic_args = [*profile_args[:3], str(dynamic), *profile_args[4:]]
    dynamic_args += ["--set", f"input_shape={DYNAMIC_SHAPE}"]
    bare_dynamic = ["docker", "exec", warm, "python3", "/tmp/bare.py", "/tmp/dynamic.onnx",
                    str(args.runs), str(args.warmup), DYNAMIC_SHAPE]  # fmt: skip
    dyn_hub: list[tuple[float, float]] = []
    dyn_bare: list[tuple[float, float]] = []
    bare_in_warm = ["docker", "exec", warm, "python3", "/tmp/bare.py", "/tmp/bench.onnx",
                    str(args.runs), str(args.warmup)]  # fmt: skip

    hub_medians, bare_medians, hub_walls, bare_walls = [], [], [], []
    for _ in range(args.rounds):
        time.sleep(0.5)  # each measurement starts on a settled machine (container teardown)
        wall, report = hub(*profile_args, env=env)
        hub_walls.append(wall)
        hub_medians.append(report["latency_ms"]["median"])
        out = subprocess.run(bare_in_warm, capture_output=True, text=True, check=True)
        bare_medians.append(json.loads(out.stdout)["median_ms"])
        time.sleep(0.5)
        start = time.perf_counter()
        subprocess.run(bare_cmd, capture_output=True, text=True, check=True)
        bare_walls.append(time.perf_counter() - start)
        _, report = hub(*dynamic_args, env=env)
        dyn_hub.append((report["latency_ms"]["median"], report["latency_ms"]["p99"]))
        out = subprocess.run(bare_dynamic, capture_output=True, text=True, check=True)
        bare = json.loads(out.stdout)
        dyn_bare.append((bare["median_ms"], bare["p99_ms"]))

    # Paired: each round's two medians were taken back to back, so their ratio cancels the
    # machine's drift; the median over rounds is the figure.
    fidelity = statistics.median(h / b for h, b in zip(hub_medians, bare_medians, strict=True))
    overhead = statistics.median(h / b for h, b in zip(hub_walls, bare_walls, strict=True))
    print(
        f"model: {model.name} (1x3x96x96 CNN), runs={args.runs}, warmup={args.warmup}, "
        f"rounds={args.rounds}, image={image}"
    )
    print(
        f"(a) median latency  edgehub {statistics.median(hub_medians):.4f} ms  "
        f"bare loop {statistics.median(bare_medians):.4f} ms  paired ratio {fidelity:.4f}  "
        f"(rounds' medians: edgehub {min(hub_medians):.3f}-{max(hub_medians):.3f}, "
        f"bare {min(bare_medians):.3f}-{max(bare_medians):.3f} ms)"
    )
    print(
        f"(b) job wall time   warm hub exec profile {statistics.median(hub_walls):.3f} s  "
        f"docker run --rm bare {statistics.median(bare_walls):.3f} s  paired ratio {overhead:.3f}"
    )
    median_ratio = statistics.median(h[0] / b[0] for h, b in zip(dyn_hub, dyn_bare, strict=True))
    p99_ratio = statistics.median(h[1] / b[1] for h, b in zip(dyn_hub, dyn_bare, strict=True))
    print(
        f"(a') dynamic-shape conv net at {DYNAMIC_SHAPE.replace(',', 'x')}: median edgehub "
        f"{statistics.median(h[0] for h in dyn_hub):.3f} ms, bare "
        f"{statistics.median(b[0] for b in dyn_bare):.3f} ms, paired ratio {median_ratio:.4f}; "
        f"p99 edgehub {statistics.median(h[1] for h in dyn_hub):.3f} ms, bare "
        f"{statistics.median(b[1] for b in dyn_bare):.3f} ms, paired ratio {p99_ratio:.4f}"
    )
    # The warm container is left to expire on its own (keep_warm): others may be using it.


if __name__ == "__main__":
    main()
