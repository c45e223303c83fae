"""Compile input specs from an ONNX model's real inputs: names, shapes and dtypes, with
``input_shape`` fixing dynamic dimensions (AI Hub compiles static shapes only)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgehub.errors import ModelError, UsageError

InputSpec = tuple[tuple[int, ...], str]


def onnx_file(path: Path) -> Path:
    """The ``.onnx`` file of a model given as a file or as a folder with external data."""
    if path.is_dir():
        found = sorted(path.glob("*.onnx"))
        if len(found) != 1:
            raise ModelError(f"model folder {path} must hold exactly one .onnx file")
        return found[0]
    if not path.is_file():
        raise ModelError(f"model {path} not found; check the path")
    return path


def declared_inputs(path: Path) -> list[tuple[str, list[int | None], str]]:
    """The model's inputs that are not initializers: name, dims (None where dynamic), dtype;
    read with ``onnx`` (an ImportError without it)."""
    import onnx
    from onnx import helper

    try:
        model = onnx.load(str(onnx_file(path)), load_external_data=False)
    except Exception as error:
        raise ModelError(f"{path} is not a readable ONNX model: {error}") from None
    initializers = {init.name for init in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dtype = str(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        dims = [
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
            for d in tensor.shape.dim
        ]
        inputs.append((value.name, dims, dtype))
    return inputs


def _requested(names: Sequence[str], input_shape: Any) -> dict[str, tuple[int, ...]]:
    if input_shape is None:
        return {}
    if isinstance(input_shape, Mapping):
        unknown = sorted(set(input_shape) - set(names))
        if unknown:
            raise UsageError(
                f"input_shape names {', '.join(unknown)}, which the model does not have; "
                f"its inputs: {', '.join(names)}"
            )
        return {k: tuple(int(d) for d in v) for k, v in input_shape.items()}
    if len(names) != 1:
        raise UsageError(
            f"the model has {len(names)} inputs ({', '.join(names)}); give input_shape as "
            "{name: shape}"
        )
    return {names[0]: tuple(int(d) for d in input_shape)}


def onnx_input_specs(path: Path, input_shape: Any = None) -> dict[str, InputSpec]:
    """``{name: (shape, dtype)}`` in the model's input order, for ``input_specs``."""
    declared = declared_inputs(path)
    requested = _requested([name for name, _, _ in declared], input_shape)
    specs: dict[str, InputSpec] = {}
    for name, dims, dtype in declared:
        shape = requested.get(name)
        if shape is not None:
            fits = len(shape) == len(dims) and all(
                d is None or d == s for d, s in zip(dims, shape, strict=True)
            )
            if not fits or any(s <= 0 for s in shape):
                raise UsageError(
                    f"input_shape {shape} for input {name!r} does not fit its declared shape "
                    f"{_show(dims)}"
                )
        elif any(d is None for d in dims):
            example = tuple(1 if d is None else d for d in dims)
            raise UsageError(
                f"input {name!r} has dynamic dimensions {_show(dims)} and AI Hub compiles "
                f"static shapes; fix them with input_shape={{{name!r}: {example}}}"
            )
        else:
            shape = tuple(d for d in dims if d is not None)
        specs[name] = (shape, dtype)
    return specs


def _show(dims: Sequence[int | None]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"


def format_specs(specs: Mapping[str, InputSpec]) -> str:
    """``name: 1x3x224x224 float32; ...`` for the run's params."""
    return "; ".join(
        f"{name}: {'x'.join(map(str, shape))} {dtype}" for name, (shape, dtype) in specs.items()
    )
