"""Benchmark TensorRT engine builds through edgehub against a bare script (run on demand).

For each model, two comparisons, each against a bare script doing the same parse + build +
write of the engine in the same image (rounds interleaved, medians compared; goal: ratio <= 1.1):

- cold: `TensorRTCompiler(target=...).run(ctx, model)` in a fresh HubContext (starts the
  tensorrt-rtx container, ships the agent, builds, fetches the engine, layer info and log,
  records the run, removes the container) against `docker run --rm IMAGE python3 bare.py`;
- warm: the same with a warm container (``EDGEHUB_KEEP_WARM``: its resident agent has TensorRT
  imported) against `docker exec` of the bare script into a running container of the image.

The builder-only times (TensorRT's build_serialized_network) of both are shown too.

    python benchmarks/bench_tensorrt.py [--rounds 3] [--target sm86]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[1]

BARE = r"""
import json, sys, time
import tensorrt_rtx_bindings as trt
path, target, out = sys.argv[1], sys.argv[2], sys.argv[3]
logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
parser = trt.OnnxParser(network, logger)
assert parser.parse_from_file(path)
config = builder.create_builder_config()
config.num_compute_capabilities = 1
config.set_compute_capability(getattr(trt.ComputeCapability, target.upper()), 0)
config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
start = time.perf_counter()
blob = builder.build_serialized_network(network, config)
build = time.perf_counter() - start
open(out, "wb").write(blob)
print(json.dumps({"build_s": build}))
"""


def models() -> list[Path]:
    """From a build of ~0.1 s (edgehub's fixed cost dominates) to builds of seconds."""
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    names = ("light_inception_v1.onnx", "light_shufflenet.onnx", "light_resnet50.onnx")
    return [REPO / "examples" / "tiny_cnn.onnx", *(light / name for name in names)]


def bare_once(image: str, model: Path, target: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bare.py").write_text(BARE)
        (work / model.name).write_bytes(model.read_bytes())
        work.chmod(0o777)
        argv = ["docker", "run", "--rm", "--network", "none", "-v", f"{work}:/w", "-w", "/w",
                image, "python3", "bare.py", model.name, target, "out.engine"]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
    return wall, float(json.loads(done.stdout.strip().splitlines()[-1])["build_s"])


class WarmBare:
    """A running container of the image with a work folder, for `docker exec` of the script."""

    def __init__(self, image: str) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="edgehub-bench-trt-"))
        (self.work / "bare.py").write_text(BARE)
        self.work.chmod(0o777)
        argv = ["docker", "run", "-d", "--rm", "--network", "none", "-v", f"{self.work}:/w",
                "-w", "/w", image, "sleep", "infinity"]  # fmt: skip
        self.id = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()

    def once(self, model: Path, target: str) -> tuple[float, float]:
        (self.work / model.name).write_bytes(model.read_bytes())
        argv = ["docker", "exec", self.id, "python3", "bare.py", model.name, target, "out.engine"]
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
        return wall, float(json.loads(done.stdout.strip().splitlines()[-1])["build_s"])

    def close(self) -> None:
        subprocess.run(["docker", "rm", "-f", self.id], capture_output=True, check=False)


def edgehub_once(model: Path, target: str, warm: bool = False) -> tuple[float, float]:
    from edgehub.core import HubContext
    from edgehub.core.compile import TensorRTCompiler

    if warm:
        os.environ["EDGEHUB_KEEP_WARM"] = "600"
    else:
        os.environ.pop("EDGEHUB_KEEP_WARM", None)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        with HubContext(project_name="bench-trt", artifact_base_dir=Path(tmp)) as ctx:
            compiled = TensorRTCompiler(target=target).run(ctx, model)
        wall = time.perf_counter() - start
        assert compiled.run_log is not None
        build = float(compiled.run_log.metrics["build_time_s"].value)
    return wall, build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="sm86")
    args = parser.parse_args()
    from edgehub import images

    image = images.require_image("tensorrt-rtx").tag
    edgehub_once(models()[0], args.target)  # warm: agent zipapp built, image pages cached
    for _ in range(3):  # the warm container, then its resident agent (started after a job)
        edgehub_once(models()[0], args.target, warm=True)
    warm_bare = WarmBare(image)
    try:
        warm_bare.once(models()[0], args.target)
        for model in models():
            runs: dict[str, list[tuple[float, float]]] = {
                k: [] for k in ("hub", "bare", "whub", "wbare")
            }
            for _ in range(args.rounds):
                runs["hub"].append(edgehub_once(model, args.target))
                runs["bare"].append(bare_once(image, model, args.target))
                runs["whub"].append(edgehub_once(model, args.target, warm=True))
                runs["wbare"].append(warm_bare.once(model, args.target))
            wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
            build = {k: statistics.median(b for _, b in v) for k, v in runs.items()}
            print(
                f"{model.name} ({args.rounds} rounds): cold: edgehub {wall['hub']:.2f} s vs bare "
                f"`docker run` {wall['bare']:.2f} s (ratio {wall['hub'] / wall['bare']:.2f}); "
                f"warm: edgehub {wall['whub']:.2f} s vs bare `docker exec` {wall['wbare']:.2f} s "
                f"(ratio {wall['whub'] / wall['wbare']:.2f}); builder alone (cold) "
                f"{build['hub']:.2f} vs {build['bare']:.2f} s (ratio "
                f"{build['hub'] / build['bare']:.2f}), (warm) {build['whub']:.2f} vs "
                f"{build['wbare']:.2f} s"
            )
    finally:
        warm_bare.close()
        os.environ.pop("EDGEHUB_KEEP_WARM", None)


if __name__ == "__main__":
    main()
