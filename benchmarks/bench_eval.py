"""Benchmark `hub exec eval` on local ONNX Runtime (run on demand, not in CI).

(a) Dataset throughput: `hub exec eval onnxruntime --from-run C --dataset 1000.npz` (a float
    model of about 1 ms per run, compiled once; a warm container, EDGEHUB_KEEP_WARM) against a
    bare script that runs both models (compiled and reference) over the same samples in the same
    container (`docker exec`, the samples copied in once); the paired ratio of wall times, goal
    <= 1.2: the samples go per model in one agent call, never one call per sample.
(b) `--layers` on a chain of >= 100 layers (quantized): extra model runs and wall time, against a
    bare script in the same container that marks every tensor as an output at once; the peak
    RSS of that script's process next to one marking a single tensor (the cost bisection avoids).

    The model of (a) is sized here to about ``--model-ms`` per run (a bare timing in the
    container); the output says its layers and the per-run time measured in both loops.
    ``--breakdown`` then times the parts of one more eval (`TRACED`).

    python benchmarks/bench_eval.py [--rounds 5] [--samples 1000] [--layers 120] [--breakdown]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
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
import sys, time, numpy as np, onnxruntime as ort
samples = np.load(sys.argv[3])["x"]
start = time.perf_counter()
runs = 0.0
for path in sys.argv[1:3]:
    options = ort.SessionOptions(); options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    began = time.perf_counter()
    outputs = [session.run(None, {"x": s})[0] for s in samples]
    runs += time.perf_counter() - began
print(time.perf_counter() - start, runs / (2 * len(samples)) * 1e3)
"""
# Where the time of one `hub exec eval` goes: these functions are timed in a traced run
# (`--breakdown`), printed in the order they started.
TRACED = [
    ("edgehub.ops.eval.run", "load_dataset"),
    ("edgehub.ops.eval.run", "model_signature"),
    ("edgehub.ops.eval.measure", "run_both"),
    ("edgehub.ops.eval.measure", "score_outputs"),
    ("edgehub.ops.eval.measure", "_record"),
    ("edgehub.toolchains.batch", "_shared"),
    ("edgehub.toolchains.batch", "load_npz"),
    ("edgehub.toolchains.agent_call", "AgentCall.call"),
    ("edgehub.runners.docker.runner", "pack"),
    ("edgehub.runners.exchange", "_unpack"),
    ("edgehub.runners.docker.runner", "DockerCommandRunner.collect"),
    ("edgehub.runners.docker.runner", "DockerCommandRunner.discard"),
    ("edgehub.toolchains.batch", "record_agent_result"),
    ("edgehub.tracking.client", "Client.log_artifact"),
]

MARK_ALL = r"""
import resource, sys, time, onnx, numpy as np, onnxruntime as ort
model = onnx.load(sys.argv[1]); keep = int(sys.argv[3])
names = [n.output[0] for n in model.graph.node][: keep or None]
model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
samples = np.load(sys.argv[2])["x"][:4]
start = time.perf_counter()
options = ort.SessionOptions(); options.log_severity_level = 3
session = ort.InferenceSession(
    model.SerializeToString(), options, providers=["CPUExecutionProvider"]
)
outputs = [session.run(None, {"x": s}) for s in samples]
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _model(path: Path, layers: int, width: int, rng: np.random.Generator, rows: int = 16) -> None:
    """A chain of ``layers`` (MatMul, Relu alternating) on ``rows`` x ``width`` activations."""
    nodes, weights, previous = [], [], "x"
    for i in range(layers // 2):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        weights.append(numpy_helper.from_array(w, f"W{i}"))
        nodes.append(helper.make_node("MatMul", [previous, f"W{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        previous = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [rows, width])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))


def _probe(container: str, work: Path, rng: np.random.Generator, target_ms: float) -> int:
    """Layers of the throughput model for about ``target_ms`` per run here: bare timings in
    the container, from a 16-layer model, each length scaled by how far its time was from
    the target, until one is within 10 % (the time per layer grows once the weights no
    longer fit the CPU's caches, so one scaling overshoots)."""
    copy_in(container, work / "probe.npz", "/tmp/probe.npz")
    layers = 16
    for _ in range(5):
        _model(work / "probe.onnx", layers, 512, rng)
        copy_in(container, work / "probe.onnx", "/tmp/probe.onnx")
        per_run = statistics.median(bare(container, "/tmp/bare.py", "/tmp/probe.onnx",
                                         "/tmp/probe.onnx", "/tmp/probe.npz")[2]
                                    for _ in range(3))  # fmt: skip
        if abs(per_run / target_ms - 1) <= 0.1:
            break
        layers = max(2, 2 * round(layers / 2 * target_ms / per_run))
    return layers


def _breakdown(args: list[str], env: dict[str, str]) -> None:
    """One eval run in a child that times `TRACED` (see `_traced`)."""
    out = subprocess.run([sys.executable, __file__, "--traced", *args], capture_output=True,
                         text=True, env=env, check=True)  # fmt: skip
    print("where one eval's time goes (ms from start, ms taken):")
    print("\n".join(line for line in out.stderr.splitlines() if line.startswith("  ")))


def _traced(argv: list[str]) -> None:
    import functools
    import importlib

    origin = time.perf_counter()
    rows: list[tuple[float, str]] = []

    def timed(owner: object, attr: str, label: str) -> None:
        function = getattr(owner, attr)

        @functools.wraps(function)
        def inner(*a: object, **k: object) -> object:
            began = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                took = (time.perf_counter() - began) * 1e3
                rows.append((began - origin, f"{label} {took:.0f}"))

        setattr(owner, attr, inner)

    from edgehub.cli.main import run

    rows.append((time.perf_counter() - origin, "hub's CLI imported"))
    for module, name in TRACED:
        owner: object = importlib.import_module(module)
        *parents, attr = name.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        timed(owner, attr, name)
    sys.argv = ["hub", *argv]
    try:
        run()
    finally:
        rows.append((time.perf_counter() - origin, "end"))
        for at, what in sorted(rows):
            print(f"  {at * 1e3:7.0f}  {what}", file=sys.stderr)


def hub(*args: str, env: dict[str, str]) -> tuple[float, dict]:
    exe = str(Path(sys.executable).with_name("hub"))
    start = time.perf_counter()
    out = subprocess.run([exe, "-q", *args], capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, json.loads(out.stdout) if out.stdout.startswith("{") else {}


def copy_in(container: str, local: Path, remote: str) -> None:
    with local.open("rb") as fh:
        subprocess.run(["docker", "exec", "-i", container, "sh", "-c", f"cat > {remote}"],
                       stdin=fh, check=True)  # fmt: skip


def warm_container(image: str) -> str:
    found = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=org.edgehub.warm=1", "--filter",
         f"ancestor={image}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not found:
        sys.exit(f"no warm container of {image} is running")
    return found[0]


def bare(container: str, *argv: str) -> list[float]:
    start = time.perf_counter()
    out = subprocess.run(["docker", "exec", container, "python3", *argv], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return [time.perf_counter() - start, *map(float, out.stdout.split())]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--layers", type=int, default=120)
    parser.add_argument("--model-ms", type=float, default=1.0, help="(a)'s model, per run")
    parser.add_argument("--skip-throughput", action="store_true", help="only (b)")
    parser.add_argument("--breakdown", action="store_true", help="(a): time one eval's parts")
    parser.add_argument("--skip-layers", action="store_true", help="only (a)")
    parser.add_argument("--model-layers", type=int, help="(a)'s model size, not probed")
    if sys.argv[1:2] == ["--traced"]:
        return _traced(sys.argv[2:])
    args = parser.parse_args()

    from edgehub import images

    image = images.require_image("onnxruntime").tag
    work = Path(tempfile.mkdtemp(prefix="edgehub-bench-eval-"))
    atexit.register(shutil.rmtree, work, True)  # however the bench ends
    rng = np.random.default_rng(0)
    _model(work / "chain.onnx", args.layers, 256, rng, rows=256)  # 256 KiB a tensor
    np.savez(work / "data.npz", x=rng.standard_normal((args.samples, 16, 512)).astype("f4"))
    np.savez(work / "chain.npz", x=rng.standard_normal((8, 256, 256)).astype("f4"))
    env = {**os.environ, "EDGEHUB_KEEP_WARM": "600", "EDGEHUB_STORE": str(work / "store")}
    os.chdir(work)
    _model(work / "float.onnx", 2, 512, rng)  # a first eval starts the warm container
    np.savez(work / "probe.npz", x=rng.standard_normal((200, 16, 512)).astype("f4"))
    hub("exec", "eval", "onnxruntime", "float.onnx", "--dataset", "probe.npz", env=env)
    warm = warm_container(image)
    copy_in(warm, _text(work / "bare.py", BARE), "/tmp/bare.py")
    layers = args.model_layers or _probe(warm, work, rng, args.model_ms)
    _model(work / "float.onnx", layers, 512, rng)
    hub("exec", "compile", "onnxruntime", "float.onnx", "--set", "quantization=none", env=env)
    _, compiled = hub("runs", "show", "latest:compile", "--json", env=env)
    model = next(a["path"] for a in compiled["artifacts"] if a["name"] == "path")
    evaluate = ["exec", "eval", "onnxruntime", "--from-run", compiled["run_id"], "--dataset",
                "data.npz", "--json"]  # fmt: skip
    hub(*evaluate, env=env)  # warm: the dataset placed in the container, the resident agent
    copies = {"data.npz": work / "data.npz", "c.onnx": Path(model), "f.onnx": work / "float.onnx",
              "chain.onnx": work / "chain.onnx", "chain.npz": work / "chain.npz"}  # fmt: skip
    for name, local in copies.items():
        copy_in(warm, local, f"/tmp/{name}")
    copy_in(warm, _text(work / "mark.py", MARK_ALL), "/tmp/mark.py")
    ratios, hub_walls, bare_walls, hub_ms, bare_ms = [], [], [], [], []
    for _ in range(0 if args.skip_throughput else args.rounds):
        wall, report = hub(*evaluate, env=env)
        base = bare(warm, "/tmp/bare.py", "/tmp/c.onnx", "/tmp/f.onnx", "/tmp/data.npz")
        hub_walls.append(wall)
        bare_walls.append(base[0])
        ratios.append(wall / base[0])
        hub_ms.append(sum(report["timings_ms"].values()) / (2 * args.samples))
        bare_ms.append(base[2])
    if ratios:
        print(f"(a) eval of {args.samples} samples, both models ({layers} layers, "
              f"{statistics.median(bare_ms):.2f} ms per run in the bare loop, "
              f"{statistics.median(hub_ms):.2f} ms in the agent): hub "
              f"{statistics.median(hub_walls):.2f} s, bare loop in the same container "
              f"{statistics.median(bare_walls):.2f} s, median paired ratio "
              f"{statistics.median(ratios):.3f} (goal <= 1.2); load "
              f"{os.getloadavg()[0]:.1f}")  # fmt: skip
        if args.breakdown:
            _breakdown(evaluate, env)

    if args.skip_layers:
        return
    hub("exec", "compile", "onnxruntime", "chain.onnx", "--set", "quantization=static",
        "--set", "calibration_data=chain.npz", env=env)  # fmt: skip
    start = time.perf_counter()
    _, report = hub("exec", "eval", "onnxruntime", "--from-run", "latest", "--dataset",
                    "chain.npz", "--layers", "--json", env=env)  # fmt: skip
    layers_wall = time.perf_counter() - start
    found = report["layers"]
    every = bare(warm, "/tmp/mark.py", "/tmp/chain.onnx", "/tmp/chain.npz", "0")
    single = bare(warm, "/tmp/mark.py", "/tmp/chain.onnx", "/tmp/chain.npz", "1")
    first = found["first_divergent"]
    print(f"(b) --layers on {found['layers']} layers: {found['runs']} extra runs of both models "
          f"(bound ceil(log2)+1 = {int(np.ceil(np.log2(found['layers']))) + 1}), whole eval "
          f"{layers_wall:.2f} s, first divergent: {first['node'] if first else None}; marking "
          f"every tensor at once: one run of {every[1]:.2f} s ({every[0]:.2f} s wall), peak "
          f"RSS {every[2]:.0f} MiB vs one tensor {single[2]:.0f} MiB")  # fmt: skip


def _text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
