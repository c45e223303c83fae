"""The builder venv's side of the corpus: the catalog, and one model's export and checks.

    python -m corpus.worker catalog               # the catalog as JSON, one object per model
    python -m corpus.worker build NAME --out DIR  # DIR/NAME.onnx, NAME.data.npz, NAME.entry.json

Run with ``benchmarks`` on ``PYTHONPATH``, in the venv `build.py` makes. A build seeds every
generator from the model's name, makes the model (random weights), settles its batch-norm
statistics on the model's own samples (so activations have realistic ranges, as a trained
model's do), exports it, checks it with ``onnx.checker``, runs every sample through ONNX
Runtime and compares the first with PyTorch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from corpus import spec as corpus_spec
from corpus.spec import Built, Spec

GRAPH_FEATURES = {
    "int64_input",
    "bool_input",
    "multi_input",
    "multi_output",
    "unnamed_dims",
    "symbolic_output",
}
FAMILY_MODULES = (
    "vision",
    "detection",
    "segmentation",
    "ocr",
    "keypoints",
    "audio",
    "text",
    "tabular",
)


def catalog() -> list[Spec]:
    import importlib

    for module in FAMILY_MODULES:
        importlib.import_module(f"corpus.{module}")
    return corpus_spec.CATALOG


def stacked(built: Built) -> dict[str, np.ndarray]:
    """The dataset arrays: samples concatenated on the batch axis where an input's first axis
    is its batch, else stacked on a new leading samples axis (RNN states, shared inputs)."""
    arrays = {}
    for name in built.samples[0]:
        values = [np.asarray(sample[name]) for sample in built.samples]
        axis = built.batch_axis.get(name, 0)
        arrays[name] = np.concatenate(values, 0) if axis == 0 else np.stack(values, 0)
    return arrays


def batched(built: Built, count: int | None = None) -> list[np.ndarray]:
    """The first ``count`` samples (all by default) in one batch."""
    out = []
    for name in built.samples[0]:
        values = [np.asarray(sample[name]) for sample in built.samples[:count]]
        axis = built.batch_axis.get(name, 0)
        out.append(values[0] if axis is None else np.concatenate(values, axis))
    return out


def settle_batchnorm(model: Any, inputs: list[np.ndarray]) -> bool:
    """Give batch norms the statistics of ``inputs`` (a cumulative average over one pass)."""
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return False
    model.eval()
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
        norm.train()
    with torch.no_grad():
        model(*[torch.from_numpy(np.ascontiguousarray(a)) for a in inputs])
    model.eval()
    return True


def as_outputs(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in as_outputs(item)]
    return [value]


def dims(value_info: Any) -> list[int | str | None]:
    out: list[int | str | None] = []
    for dim in value_info.type.tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            out.append(dim.dim_value)
        elif dim.HasField("dim_param"):
            out.append(dim.dim_param)
        else:
            out.append(None)
    return out


def signature(values: Any) -> list[dict[str, Any]]:
    import onnx

    return [
        {
            "name": v.name,
            "dtype": onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).name,
            "shape": dims(v),
        }
        for v in values
    ]


def shape_text(sample: dict[str, np.ndarray]) -> str:
    """``input_shape`` as `hub --set` reads it: bare for one input, else ``name:shape,...``."""
    shapes = {name: "x".join(str(d) for d in np.shape(a)) for name, a in sample.items()}
    if len(shapes) == 1:
        return next(iter(shapes.values()))
    return ",".join(f"{name}:{shape}" for name, shape in shapes.items())


def compare(reference: np.ndarray, actual: np.ndarray) -> float:
    """Largest absolute difference over the reference's largest magnitude."""
    if reference.shape != actual.shape:
        raise AssertionError(f"shape {actual.shape} where PyTorch gives {reference.shape}")
    if reference.dtype.kind in "biu":
        return float(np.any(reference != actual))
    scale = float(np.abs(reference).max()) or 1.0
    return float(np.abs(reference.astype(np.float64) - actual).max() / scale)


def graph_features(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> set[str]:
    """The features an exported graph's signature shows."""
    found = set()
    input_dims = {d for i in inputs for d in i["shape"] if isinstance(d, str)}
    if any(i["dtype"] == "int64" for i in inputs):
        found.add("int64_input")
    if any(i["dtype"] == "bool" for i in inputs):
        found.add("bool_input")
    if len(inputs) > 1:
        found.add("multi_input")
    if len(outputs) > 1:
        found.add("multi_output")
    if any(d is None or (isinstance(d, int) and d < 0) for i in inputs for d in i["shape"]):
        found.add("unnamed_dims")
    if any(isinstance(d, str) and d not in input_dims for o in outputs for d in o["shape"]):
        found.add("symbolic_output")
    return found


def _takes_varargs(model: Any) -> bool:
    import inspect

    parameters = inspect.signature(model.forward).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


def _batched(built: Built) -> bool:
    """Whether every input (that has a batch) has a dynamic batch axis."""
    axes = {n: built.batch_axis.get(n, 0) for n in built.samples[0]}
    return all(built.dynamic.get(n, {}).get(a) for n, a in axes.items() if a is not None)


def build(spec: Spec, out: Path) -> dict[str, Any]:
    import onnx
    import onnxruntime as ort
    import torch

    started = time.perf_counter()
    seed = zlib.crc32(spec.name.encode())
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    built = spec.make()
    model = built.model.eval()
    settled = settle_batchnorm(model, batched(built))
    first = built.samples[0]
    names = list(first)
    args = tuple(torch.from_numpy(np.ascontiguousarray(first[n])) for n in names)
    with torch.no_grad():
        reference = [t.numpy() for t in as_outputs(model(*args))]
    if len(reference) != len(built.outputs):
        raise AssertionError(f"{len(reference)} outputs but {len(built.outputs)} names")

    path = out / f"{spec.name}.onnx"
    options: dict[str, Any]
    example = args
    if spec.exporter == "torch.onnx.dynamo":  # dynamic_shapes in the structure of the args
        shapes = tuple(built.dynamic.get(n) for n in names)
        wrapped = (shapes,) if _takes_varargs(model) else shapes
        options = {"dynamo": True, "external_data": False, "dynamic_shapes": wrapped}
        if _batched(built):  # traced at batch 2: a batch of 1 would be specialized
            example = tuple(torch.from_numpy(a) for a in batched(built, 2))
    else:
        options = {"dynamo": False, "dynamic_axes": built.dynamic or None}
    # torch.export traces best without autograd (Swin's views fail with it); the TorchScript
    # exporter must see autograd on, else nn.TransformerEncoder takes its fused fast path,
    # which has no ONNX export: as users run each
    grad = spec.exporter != "torch.onnx.dynamo"
    with warnings.catch_warnings(), torch.set_grad_enabled(grad):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            example,
            str(path),
            input_names=names,
            output_names=built.outputs,
            opset_version=spec.opset,
            **options,
        )
    proto = onnx.load(str(path))
    if built.postprocess is not None:
        built.postprocess(proto)
        onnx.save(proto, str(path))
    onnx.checker.check_model(str(path), full_check=True)

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    if [i.name for i in session.get_inputs()] != names:
        raise AssertionError(f"ONNX inputs {[i.name for i in session.get_inputs()]} != {names}")
    error = 0.0
    for index, sample in enumerate(built.samples):
        results = session.run(None, {n: np.ascontiguousarray(sample[n]) for n in names})
        for name, value in zip(built.outputs, results, strict=True):
            if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                raise AssertionError(f"sample {index}: output {name} is not finite")
        if index == 0:
            error = max(compare(r, a) for r, a in zip(reference, results, strict=True))
    if error > built.tolerance:
        raise AssertionError(f"ONNX Runtime differs from PyTorch by {error:.2e} (relative)")
    if _batched(built):  # a dynamic batch must hold two samples, each as it does alone
        pair = session.run(None, dict(zip(names, batched(built, 2), strict=True)))
        alone = [session.run(None, {n: s[n] for n in names}) for s in built.samples[:2]]
        for index, name in enumerate(built.outputs):
            axis = built.output_batch_axis.get(name, 0)
            joined = np.concatenate([alone[0][index], alone[1][index]], axis)
            if compare(joined, pair[index]) > built.tolerance:
                raise AssertionError(f"output {name} at batch 2 differs from batch 1")

    inputs, outputs = signature(proto.graph.input), signature(proto.graph.output)
    shown = graph_features(inputs, outputs)
    missing = {f for f in spec.features if f in GRAPH_FEATURES} - shown
    if missing:
        raise AssertionError(f"declared {sorted(missing)} but the exported graph shows none")
    features = [*spec.features, *sorted(shown - set(spec.features))]

    dataset = out / f"{spec.name}.data.npz"
    np.savez(dataset, **stacked(built))
    entry = {
        **spec.describe(),
        "features": features,
        "file": path.name,
        "dataset": dataset.name,
        "samples": len(built.samples),
        "input_shape": shape_text(first),
        "inputs": inputs,
        "outputs": outputs,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "bytes": path.stat().st_size,
        "dataset_bytes": dataset.stat().st_size,
        "batchnorm_settled": settled,
        "ort_ok": True,
        "ort_max_rel_err": error,
        "build_s": round(time.perf_counter() - started, 2),
    }
    (out / f"{spec.name}.entry.json").write_text(json.dumps(entry, indent=1))
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="corpus.worker")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("catalog")
    one = sub.add_parser("build")
    one.add_argument("name")
    one.add_argument("--out", type=Path, required=True)
    one.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    specs = catalog()
    if args.command == "catalog":
        json.dump([s.describe() for s in specs], sys.stdout)
        return 0
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    chosen = [s for s in specs if s.name == args.name]
    if not chosen:
        print(f"no corpus model named {args.name}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    entry = build(chosen[0], args.out)
    print(json.dumps({k: entry[k] for k in ("name", "bytes", "ort_max_rel_err", "build_s")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
