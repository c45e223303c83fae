"""``input_shape``: validating requested input shapes and fixing a model's dynamic dimensions.

``input_shape`` is ``[ints]`` (the first input; the only one for most models) or
``{input name: [ints]}``. Each shape must have the input's rank and agree with its fixed dims.
Fixing a symbolic dim (``"N"``) fixes it everywhere it appears (other inputs, outputs); then ONNX
shape inference runs again.
"""

from __future__ import annotations

from typing import Any, Sequence

from .protocol import UsageError
from .tensors import TensorSpec, describe_specs


def parse_input_shape(raw: Any, specs: Sequence[TensorSpec]) -> dict[str, list[int]]:
    """Validate ``raw`` against the model inputs; returns {input name: shape}."""
    if raw is None:
        return {}
    if not specs:
        raise UsageError("input_shape given but the model has no inputs")
    if isinstance(raw, list):
        requested: dict[str, Any] = {specs[0].name: raw}
    elif isinstance(raw, dict):
        requested = dict(raw)
    else:
        raise UsageError(
            "input_shape must be a list of ints (the first input) or {input name: [ints]}, "
            f"got {raw!r}"
        )
    by_name = {s.name: s for s in specs}
    shapes: dict[str, list[int]] = {}
    for name, shape in requested.items():
        spec = by_name.get(name)
        if spec is None:
            raise UsageError(
                f"input_shape names unknown input '{name}'; model inputs: {describe_specs(specs)}"
            )
        if (
            not isinstance(shape, list)
            or not shape
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape)
        ):
            raise UsageError(
                f"input_shape for '{name}' must be a non-empty list of positive ints, got {shape!r}"
            )
        if spec.shape is not None:
            if len(shape) != len(spec.shape):
                raise UsageError(
                    f"input_shape for '{name}' has rank {len(shape)} but the input is "
                    f"{spec.describe()} (rank {len(spec.shape)})"
                )
            for axis, (got, want) in enumerate(zip(shape, spec.shape)):
                if isinstance(want, int) and got != want:
                    raise UsageError(
                        f"input_shape for '{name}' sets dim {axis} to {got} but the model fixes "
                        f"it to {want} ({spec.describe()})"
                    )
        shapes[name] = [int(d) for d in shape]
    return shapes


def _symbol_values(model: Any, shapes: dict[str, list[int]]) -> dict[str, int]:
    values: dict[str, int] = {}
    for value_info in model.graph.input:
        shape = shapes.get(value_info.name)
        if shape is None:
            continue
        for dim, size in zip(value_info.type.tensor_type.shape.dim, shape):
            if dim.HasField("dim_param") and dim.dim_param:
                known = values.get(dim.dim_param)
                if known is not None and known != size:
                    raise UsageError(
                        f"input_shape gives dimension '{dim.dim_param}' two values "
                        f"({known} and {size}); inputs sharing a dimension name must agree"
                    )
                values[dim.dim_param] = size
    return values


def fix_input_shapes(model: Any, shapes: dict[str, list[int]]) -> list[str]:
    """Set the requested dims in ``model`` (in place), propagate symbols, re-infer shapes.

    Returns notes (e.g. when shape inference failed and the model was kept as fixed).
    """
    from onnx import shape_inference

    symbols = _symbol_values(model, shapes)

    def fix(value_info: Any, shape: Any) -> None:
        tensor_type = value_info.type.tensor_type
        if not tensor_type.HasField("shape"):
            if shape is None:
                return
            for _ in shape:
                tensor_type.shape.dim.add()
        for index, dim in enumerate(tensor_type.shape.dim):
            size = shape[index] if shape is not None else None
            if size is None and dim.HasField("dim_param"):
                size = symbols.get(dim.dim_param)
            if size is not None:
                dim.dim_value = int(size)  # clears dim_param (a oneof)

    initializers = {t.name for t in model.graph.initializer}
    for value_info in model.graph.input:
        if value_info.name not in initializers:
            fix(value_info, shapes.get(value_info.name))
    for value_info in model.graph.output:
        fix(value_info, None)
    del model.graph.value_info[:]  # stale intermediate shapes; inference recomputes them
    notes: list[str] = []
    try:
        inferred = shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception as exc:
        notes.append(f"shape inference after fixing input shapes failed ({exc}); continuing")
    else:
        model.CopyFrom(inferred)
    return notes
