"""Benchmark TensorRT engine builds through edgehub against a bare script (run on demand).

For each model, two comparisons, each against a bare script doing the same parse + build +
write of the engine in the same image (rounds interleaved, medians and paired ratios; goal:
cold ratio <= 1.1 for the light models):

- cold: `TensorRTCompiler(target=...).run(ctx, model)` in a fresh HubContext (the build runs
  as a hardened container of its own: ships the agent and the model, builds, fetches the
  engine, layer info and log, records the run, removes the container) against
  `docker run --rm IMAGE python3 bare.py`; the fixed per-run cost is the paired difference of
  the two wall times less that of their builders' own times (what edgehub adds to a cold run);
- warm: the same with a warm container (``EDGEHUB_KEEP_WARM``: its resident agent has TensorRT
  imported) against `docker exec` of the bare script into a running container of the image.

The builder-only times (TensorRT's build_serialized_network) of both are shown too.

    python benchmarks/bench_tensorrt.py [--rounds 5] [--target sm86] [--no-warm]
        [--compare-src DIR]

``--compare-src DIR`` also times, in the same rounds, cold builds by another checkout's sources
(``DIR/src``, in a child process that serves the builds), e.g. the commit before a change.
With the defaults it takes about 1.5 min on an idle 2-core machine.
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
    """From a build of ~0.1 s (edgehub's fixed cost dominates: its ratio has no goal, the
    fixed cost is its figure) to the light models' builds of about a second."""
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
        atexit.register(shutil.rmtree, self.work, True)  # however the bench ends
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


class OtherTree:
    """Cold builds by another checkout's sources, in a child process serving them (one JSON
    line per build)."""

    def __init__(self, source: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(source.resolve() / "src")}
        env.pop("EDGEHUB_KEEP_WARM", None)
        argv = [sys.executable, __file__, "--serve"]
        self.child = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def once(self, model: Path, target: str) -> tuple[float, float]:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(json.dumps([str(model), target]) + "\n")
        self.child.stdin.flush()
        wall, build = json.loads(self.child.stdout.readline())
        return float(wall), float(build)

    def close(self) -> None:
        if self.child.stdin is not None:
            self.child.stdin.close()
        self.child.wait(60)


def serve() -> None:
    for line in sys.stdin:
        model, target = json.loads(line)
        print(json.dumps(edgehub_once(Path(model), target)), flush=True)


def paired(runs: list[tuple[float, float]], bare: list[tuple[float, float]]) -> tuple[float, float]:
    """The median over rounds of the wall-time ratio, and of the fixed cost: the difference of
    the wall times less that of the builders' own times (each round's pair ran back to back)."""
    ratio = statistics.median(h / b for (h, _), (b, _) in zip(runs, bare, strict=True))
    fixed = statistics.median(
        (h - hb) - (b - bb) for (h, hb), (b, bb) in zip(runs, bare, strict=True)
    )
    return ratio, fixed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", default="sm86")
    parser.add_argument("--no-warm", action="store_true", help="cold runs only")
    parser.add_argument("--compare-src", type=Path, default=None)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    from edgehub import images

    image = images.require_image("tensorrt-rtx").tag
    edgehub_once(models()[0], args.target)  # warm: agent zipapp built, image pages cached
    other = OtherTree(args.compare_src) if args.compare_src else None
    if other is not None:
        other.once(models()[0], args.target)
    if not args.no_warm:
        for _ in range(3):  # the warm container, then its resident agent (started after a job)
            edgehub_once(models()[0], args.target, warm=True)
    warm_bare = None if args.no_warm else WarmBare(image)
    load = os.getloadavg()
    print(f"image={image} rounds={args.rounds} load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} (cores: {os.cpu_count()})")  # fmt: skip
    fixed_all: list[float] = []
    try:
        if warm_bare is not None:
            warm_bare.once(models()[0], args.target)
        for model in models():
            runs: dict[str, list[tuple[float, float]]] = {
                k: [] for k in ("hub", "bare", "other", "whub", "wbare")
            }
            for _ in range(args.rounds):
                runs["hub"].append(edgehub_once(model, args.target))
                runs["bare"].append(bare_once(image, model, args.target))
                if other is not None:
                    runs["other"].append(other.once(model, args.target))
                if warm_bare is not None:
                    runs["whub"].append(edgehub_once(model, args.target, warm=True))
                    runs["wbare"].append(warm_bare.once(model, args.target))
            wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items() if v}
            build = {k: statistics.median(b for _, b in v) for k, v in runs.items() if v}
            ratio, fixed = paired(runs["hub"], runs["bare"])
            fixed_all += [fixed]
            goal = "goal <= 1.1" if model.name.startswith("light_") else "no goal: fixed cost"
            line = (
                f"{model.name} ({args.rounds} rounds): cold: edgehub {wall['hub']:.2f} s vs bare "
                f"`docker run --rm` {wall['bare']:.2f} s, paired ratio {ratio:.2f} ({goal}), "
                f"fixed per-run cost {fixed:+.3f} s; builder alone {build['hub']:.2f} vs "
                f"{build['bare']:.2f} s"
            )
            if runs["other"]:
                other_ratio, other_fixed = paired(runs["other"], runs["bare"])
                line += (
                    f"; {args.compare_src}: {wall['other']:.2f} s, paired ratio {other_ratio:.2f}, "
                    f"fixed cost {other_fixed:+.3f} s"
                )
            if runs["whub"]:
                warm_ratio = paired(runs["whub"], runs["wbare"])[0]
                line += (
                    f"; warm: edgehub {wall['whub']:.2f} s vs bare `docker exec` "
                    f"{wall['wbare']:.2f} s (paired ratio {warm_ratio:.2f}), builder alone "
                    f"{build['whub']:.2f} vs {build['wbare']:.2f} s"
                )
            print(line, flush=True)
        print(f"fixed per-run cost of a cold build over `docker run --rm` (median of the models'): "
              f"{statistics.median(fixed_all):+.3f} s")  # fmt: skip
    finally:
        if warm_bare is not None:
            warm_bare.close()
        if other is not None:
            other.close()
        os.environ.pop("EDGEHUB_KEEP_WARM", None)


if __name__ == "__main__":
    main()
