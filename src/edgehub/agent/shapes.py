"""``input_shape``: validating requested input shapes and fixing a model's dynamic dimensions.

``input_shape`` is ``[ints]`` (the first input; the only one for most models) or
``{input name: [ints]}``. Each shape must have the input's rank and agree with its fixed dims.
Fixing a named dim (``"N"``) fixes it everywhere it appears (other inputs, outputs); inputs that
share a name must agree. Unnamed dims (``"?"``, ``""``, ``"-1"``) are each their own unknown;
outputs' unnamed dims are left to ONNX shape inference, which runs again after fixing.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .protocol import UsageError
from .tensors import TensorSpec, describe_specs, is_named_dim, positive_ints


def example_shapes(specs: Sequence[TensorSpec]) -> list[list[int]]:
    """A shape per input for examples in messages: fixed dims as they are, a dynamic dim 1
    where it leads a shape (a batch), else 32, and a named dim one size wherever it appears."""
    leading = {s.shape[0] for s in specs if s.shape and isinstance(s.shape[0], str)}

    def size(axis: int, dim: Any) -> int:
        if isinstance(dim, int):
            return dim
        return 1 if axis == 0 or dim in leading else 32

    return [[size(i, d) for i, d in enumerate(s.shape or [1])] for s in specs]


def shape_example(specs: Sequence[TensorSpec]) -> str:
    """The accepted forms of ``input_shape``, with an example made of the model's own inputs."""
    shapes = example_shapes(specs)[:3]
    named = ",".join(f"{s.name}:{'x'.join(map(str, d))}" for s, d in zip(specs, shapes))
    as_json = ", ".join(f'"{s.name}": {d}' for s, d in zip(specs, shapes))
    first = "x".join(map(str, shapes[0])) if specs else "1x3x224x224"
    return (
        f"accepted forms: input_shape={first} (the first input), input_shape={named} "
        f"(per input), or JSON {{{as_json}}}"
    )


def parse_input_shape(raw: Any, specs: Sequence[TensorSpec]) -> dict[str, list[int]]:
    """Validate ``raw`` against the model inputs; returns {input name: shape}."""
    if raw is None:
        return {}
    if not specs:
        raise UsageError("input_shape given but the model has no inputs")
    if isinstance(raw, list):
        if len(specs) > 1 and not (raw and isinstance(raw[0], int)):
            raise UsageError(f"input_shape {raw!r} is not a shape; {shape_example(specs)}")
        requested: dict[str, Any] = {specs[0].name: raw}
    elif isinstance(raw, dict):
        requested = dict(raw)
    else:
        raise UsageError(f"input_shape {raw!r} is not a shape; {shape_example(specs)}")
    by_name = {s.name: s for s in specs}
    shapes: dict[str, list[int]] = {}
    for name, shape in requested.items():
        spec = by_name.get(name)
        if spec is None:
            raise UsageError(
                f"input_shape names unknown input '{name}'; model inputs: "
                f"{describe_specs(specs)}; {shape_example(specs)}"
            )
        if not shape or not positive_ints(shape):
            raise UsageError(
                f"input_shape for '{name}' must be a non-empty list of positive ints, got {shape!r}"
            )
        if spec.shape is not None:
            if len(shape) != len(spec.shape):
                raise UsageError(
                    f"input_shape for '{name}' has rank {len(shape)} but the input is "
                    f"{spec.describe()} (rank {len(spec.shape)}); {shape_example(specs)}"
                )
            for axis, (got, want) in enumerate(zip(shape, spec.shape)):
                if isinstance(want, int) and got != want:
                    raise UsageError(
                        f"input_shape for '{name}' sets dim {axis} to {got} but the model fixes "
                        f"it to {want} ({spec.describe()})"
                    )
        shapes[name] = [int(d) for d in shape]
    named_sizes(shapes, {name: spec.shape or [] for name, spec in by_name.items()})
    return shapes


def named_sizes(shapes: dict[str, list[int]], dims: Mapping[str, Sequence[Any]]) -> dict[str, int]:
    """The size ``shapes`` gives each named dim (a ``str`` among an input's ``dims``); inputs
    sharing one (``"batch"``) must give it one size (a UsageError otherwise)."""
    seen: dict[str, tuple[int, str]] = {}
    for name, shape in shapes.items():
        for axis, (dim, size) in enumerate(zip(dims.get(name) or [], shape)):
            if not isinstance(dim, str):
                continue
            where = f"{name} dim {axis}"
            known = seen.setdefault(dim, (size, where))
            if known[0] != size:
                raise UsageError(
                    f"input_shape gives dimension '{dim}' two values: {known[0]} ({known[1]}) "
                    f"and {size} ({where}); inputs sharing a named dimension must agree: give "
                    "both the same size"
                )
    return {dim: size for dim, (size, _) in seen.items()}


def fix_input_shapes(model: Any, shapes: dict[str, list[int]]) -> list[str]:
    """Set the requested dims in ``model`` (in place), propagate symbols, re-infer shapes.

    Returns notes (e.g. when shape inference failed and the model was kept as fixed).
    """
    from onnx import shape_inference

    named = {
        v.name: [
            d.dim_param if is_named_dim(d.dim_param) else None for d in v.type.tensor_type.shape.dim
        ]
        for v in model.graph.input
    }
    symbols = named_sizes(shapes, named)

    def fix(value_info: Any, shape: Any) -> None:
        tensor_type = value_info.type.tensor_type
        if not tensor_type.HasField("shape"):
            if shape is None:
                return
            for _ in shape:
                tensor_type.shape.dim.add()
        for index, dim in enumerate(tensor_type.shape.dim):
            size = shape[index] if shape is not None else None
            named = dim.HasField("dim_param") and is_named_dim(dim.dim_param)
            if (
                size is None
                and not named
                and not (dim.HasField("dim_value") and dim.dim_value >= 0)
            ):
                dim.Clear()  # an unknown ("?", -1): shape inference gives it its size
                continue
            if size is None and named:
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
