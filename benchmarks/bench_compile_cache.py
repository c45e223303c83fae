"""Benchmark the compile cache (run on demand, not in CI).

For each runtime, `hub exec compile RUNTIME MODEL` twice through the real entry point in a fresh
project: the first builds, the second reuses it (`cached_from`). Printed: both wall times (the
whole process, start-up included), the second as a fraction of the first (goal <= 5 %), and the
two runs' recorded durations. `--no-cache` times a third, building compile for comparison.

The inputs are written 2.5 s before the first compile, as a user's model and samples would be
older: content hashes are remembered across commands only for files that had not changed for
2 s when read (`edgehub.tracking.hash_memo`), so a compile right after writing its inputs hashes
them again on its second run.

Two models: the light example (`examples/tiny_cnn.onnx`, on ``--runtimes``), whose TensorRT
build takes under a second, so hub start-up dominates its figure, and a heavy one made here at
run time (not stored): a ResNet-18-sized conv net (11.7 M weights, 47 MB) built with
``onnx.helper``, compiled by ``--heavy-runtimes`` as TensorRT int8 with
``--calibration-samples`` random 224x224 samples (quantized to QDQ in the onnxruntime image,
then built ahead of time for sm86): about 4 s on 2 cores, most of it the calibration (TensorRT
for RTX builds ahead of time without autotuning: its builder alone takes a fraction of a second
for this net). A hit reads no input again: their hashes are remembered, and the stored copies
are recorded as they are (only the compiled model is checked by content). The defaults run in
~1 min on 2 cores.

    python benchmarks/bench_compile_cache.py [--runtimes onnxruntime,tflite,tensorrt]
        [--heavy-runtimes tensorrt] [--calibration-samples 96] [--model M] [--set K=V]
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
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tiny_cnn.onnx"
# what each runtime needs to build here without a GPU
RUNTIME_SETS = {"tensorrt": ["--set", "target=sm86"]}


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


def resnet18_like(path: Path, size: int = 224, seed: int = 0) -> Path:
    """A ResNet-18-shaped net (basic blocks 2-2-2-2, 64..512 channels, random weights)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes: list[Any] = []
    weights: list[Any] = []

    def conv(x: str, cin: int, cout: int, k: int, stride: int, relu: bool = True) -> str:
        name = f"conv{len(weights) // 2}"
        scale = (2.0 / (cin * k * k)) ** 0.5
        w = (rng.standard_normal((cout, cin, k, k)) * scale).astype(np.float32)
        weights.append(numpy_helper.from_array(w, name + "_w"))
        weights.append(numpy_helper.from_array(np.zeros(cout, np.float32), name + "_b"))
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name],
                                      kernel_shape=[k, k], strides=[stride] * 2,
                                      pads=[k // 2] * 4))  # fmt: skip
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [name + "_relu"]))
        return name + "_relu"

    x = conv("image", 3, 64, 7, 2)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1] * 4))  # fmt: skip
    x, cin = "pool", 64
    for stage in range(4):
        cout = 64 << stage
        for block in range(2):
            stride = 2 if block == 0 and stage > 0 else 1
            y = conv(conv(x, cin, cout, 3, stride), cout, cout, 3, 1, relu=False)
            skip = x if stride == 1 and cin == cout else conv(x, cin, cout, 1, stride, False)
            add = f"add{stage}{block}"
            nodes.append(helper.make_node("Add", [y, skip], [add]))
            nodes.append(helper.make_node("Relu", [add], [add + "_relu"]))
            x, cin = add + "_relu", cout
    fc = (rng.standard_normal((cin, 1000)) * 0.01).astype(np.float32)
    weights += [numpy_helper.from_array(fc, "fc_w"),
                numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b")]  # fmt: skip
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"]),
              helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"])]  # fmt: skip
    graph = helper.make_graph(
        nodes, "resnet18_like",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def calibration(folder: Path, samples: int, size: int = 224) -> Path:
    import numpy as np

    rng = np.random.default_rng(1)
    folder.mkdir()
    for index in range(samples):
        image = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        np.savez(folder / f"sample{index:03d}.npz", image=image)
    return folder


def bench(label: str, runtime: str, root: Path, model: str, extra: list[str]) -> None:
    from edgehub.tracking.hash_memo import SETTLED_NS

    args = ["exec", "compile", runtime, model, *RUNTIME_SETS.get(runtime, []), *extra]
    # The inputs were written just now; a user's are older. A file is remembered by its stamp
    # only once it has not changed for SETTLED_NS (a write in the same tick of the file
    # system's clock could go unseen), so the first compile reads them as it would a user's.
    time.sleep(SETTLED_NS / 1e9 + 0.5)
    first, built = hub(root, *args)
    second, reused = hub(root, *args)
    third, _ = hub(root, *args, "--no-cache")
    run_first, _ = duration(root, built["run_id"])
    run_second, source = duration(root, reused["run_id"])
    hit = "hit" if source == built["run_id"] else "MISS"
    print(
        f"{label:6} {runtime:12} first {first:7.2f} s (run {run_first:.2f} s)  second "
        f"{second:5.2f} s (run {run_second:.3f} s, {hit})  second/first "
        f"{100 * second / first:5.1f} %  runs {100 * run_second / run_first:5.2f} %  "
        f"--no-cache {third:.2f} s",
        flush=True,
    )


def project(folder: str) -> Path:
    root = Path(folder)
    (root / "hub.toml").write_text('[project]\nname = "bench"\nstore = ".hub"\n')
    return root


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtimes", default="onnxruntime,tflite,tensorrt")
    parser.add_argument("--heavy-runtimes", default="tensorrt", help="'' for none")
    parser.add_argument("--calibration-samples", type=int, default=96)
    parser.add_argument("--model", type=Path, default=EXAMPLE)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    extra = [word for pair in args.set for word in ("--set", pair)]
    print(f"load: {os.getloadavg()[0]:.1f} (1 min)")
    model = args.model.resolve()
    for runtime in filter(None, args.runtimes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-cache-") as folder:
            root = project(folder)
            (root / model.name).write_bytes(model.read_bytes())
            bench("light", runtime, root, model.name, extra)
    for runtime in filter(None, args.heavy_runtimes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-cache-") as folder:
            root = project(folder)
            resnet18_like(root / "resnet18_like.onnx")
            heavy = list(extra)
            if runtime == "tensorrt":
                calibration(root / "calibration", args.calibration_samples)
                heavy += ["--set", "precision=int8", "--set", "calibration_data=calibration"]
            bench("heavy", runtime, root, "resnet18_like.onnx", heavy)


if __name__ == "__main__":
    main()
