"""Optimization profiles: the min / opt / max shapes of each dynamic network input.

``shapes`` (``input_shape_range``) is ``{input: {"min": [ints], "opt": [ints], "max": [ints]}}``
(a list: one shape for all three); ``input_shape`` is static, ``[ints]`` (the first input) or
``{input: [ints]}``. Every dynamic input needs an entry of its rank that keeps its fixed dims,
with min <= opt <= max, and inputs sharing a named dim must give it the same sizes. TensorRT
ties every dim of one ``dim_param``, ``"?"`` included, so :func:`name_unknown_dims` first names
each unnamed dim (``"?"``, ``""``, ``"-1"``) apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

from ..models import load_model, replace_items, save_model, uses_external_data
from ..protocol import UsageError
from ..report import Report
from ..shapes import example_shapes
from ..tensors import TensorSpec, is_named_dim, positive_ints

Profile = Dict[str, Dict[str, List[int]]]
DimNames = Dict[str, List[Optional[str]]]  # input -> the named dim of each axis (None: unnamed)
KINDS = ("min", "opt", "max")


def _describe(tensor: dict[str, Any]) -> str:
    dims = ",".join("?" if d < 0 else str(d) for d in tensor["shape"])
    return f"{tensor['name']}[{dims}]"


def _dims_example(tensor: dict[str, Any]) -> str:
    return "x".join(str(d if d >= 0 else (32 if i else 1)) for i, d in enumerate(tensor["shape"]))


def _shape(what: str, value: Any, tensor: dict[str, Any]) -> list[int]:
    fixed = tensor["shape"]
    hint = f"the input is {_describe(tensor)}: give e.g. {tensor['name']}:{_dims_example(tensor)}"
    if not positive_ints(value):
        raise UsageError(f"{what} must be a list of positive ints, got {value!r}; {hint}")
    if len(value) != len(fixed):
        raise UsageError(f"{what} has rank {len(value)}, but {hint}")
    for axis, (got, want) in enumerate(zip(value, fixed)):
        if want >= 0 and got != want:
            raise UsageError(
                f"{what} sets dim {axis} to {got}, but the model fixes it to {want}; {hint}"
            )
    return [int(d) for d in value]


def _example(tensors: dict[str, dict[str, Any]], names: DimNames | None = None) -> str:
    """The accepted forms, sized as the agent's examples are (`..shapes.example_shapes`: a
    named dim one size wherever it appears)."""
    specs = []
    for name, tensor in tensors.items():
        axes = (names or {}).get(name) or []
        dims = [
            d if d >= 0 else (axes[i] if i < len(axes) else None)
            for i, d in enumerate(tensor["shape"])
        ]
        specs.append(TensorSpec(name, "float32", dims))
    sized = {
        spec.name: "x".join(map(str, shape)) for spec, shape in zip(specs, example_shapes(specs))
    }
    listed = list(tensors)[:3]
    named = ",".join(f"{name}:{sized[name]}" for name in listed)
    first = (listed[0], sized[listed[0]]) if listed else ("x", "1x3x224x224")
    return (
        f"give input_shape={first[1]} (the first input) or input_shape={named}, or a range "
        f"input_shape_range={first[0]}:{first[1]}/{first[1]}/{first[1]} "
        "(min/opt/max; JSON works too)"
    )


def _static(raw: Any, tensors: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``input_shape`` as ``{input: shape}``."""
    if raw is None:
        return {}
    if isinstance(raw, list) and raw and all(isinstance(d, int) for d in raw) and tensors:
        return {next(iter(tensors)): raw}
    if isinstance(raw, dict) and all(isinstance(v, list) for v in raw.values()):
        return dict(raw)
    raise UsageError(f"input_shape {raw!r} is not a shape; {_example(tensors)}")


def parse_shapes(
    raw: Any,
    inputs: list[dict[str, Any] | None],
    static: Any = None,
    names: DimNames | None = None,
) -> Profile:
    """Validate ``raw`` (ranges) and ``static`` (``input_shape``) against the network inputs;
    returns {input: {min, opt, max}}."""
    tensors = {t["name"]: t for t in inputs if t is not None}
    dynamic = [t for t in tensors.values() if any(d < 0 for d in t["shape"])]
    if raw is None:
        raw = {}
    if (
        isinstance(raw, dict)
        and len(tensors) == 1
        and sorted(raw) == sorted(KINDS)
        and next(iter(tensors)) not in raw
    ):
        raw = {next(iter(tensors)): raw}  # one input's {min, opt, max}
    if not isinstance(raw, dict):
        raise UsageError(
            f"input_shape_range must be {{input: {{min, opt, max}}}}, got {raw!r}; "
            + _example(tensors)
        )
    fixed = _static(static, tensors)
    both = sorted(set(fixed) & set(raw))
    if both:
        raise UsageError(
            f"input_shape and input_shape_range both give {', '.join(both)}: give each input "
            "one of the two"
        )
    raw = {**fixed, **raw}
    profile: Profile = {}
    for name, entry in raw.items():
        tensor = tensors.get(name)
        if tensor is None:
            known = ", ".join(_describe(t) for t in tensors.values())
            raise UsageError(
                f"input_shape names unknown input '{name}'; inputs: {known}; {_example(tensors)}"
            )
        if isinstance(entry, list):
            entry = {kind: entry for kind in KINDS}
        if not isinstance(entry, dict) or sorted(entry) != sorted(KINDS):
            raise UsageError(
                f"input_shape_range for '{name}' must have exactly min, opt and max, got {entry!r}"
            )
        what = {k: f"input_shape_range {k} of '{name}'" for k in KINDS}
        if name in fixed:
            what = {k: f"input_shape for '{name}'" for k in KINDS}
        shapes = {kind: _shape(what[kind], entry[kind], tensor) for kind in KINDS}
        for axis in range(len(tensor["shape"])):
            low, mid, high = (shapes[kind][axis] for kind in KINDS)
            if not low <= mid <= high:
                raise UsageError(
                    f"input_shape_range for '{name}' dim {axis}: need min <= opt <= max, "
                    f"got {low}, {mid}, {high}"
                )
        profile[name] = shapes
    _check_named(profile, names or {})
    _tie(profile, [t for t in dynamic if t["name"] not in profile], names or {})
    missing = [t for t in dynamic if t["name"] not in profile]
    if missing:
        listed = ", ".join(_describe(t) for t in missing)
        raise UsageError(
            f"dynamic input(s) {listed} need a shape to build for: {_example(tensors, names)}"
        )
    return profile


def _tie(profile: Profile, missing: list[dict[str, Any]], names: DimNames) -> None:
    """Add each input of ``missing`` whose dynamic dims are all named dims that ``profile``
    already sizes (``h0 [2, batch, 96]`` once ``features [batch, frames, 40]`` is given)."""
    bound: dict[str, list[int]] = {}  # a named dim's min, opt, max
    for name, entry in profile.items():
        for axis, symbol in enumerate(names.get(name, [])):
            if symbol is not None and axis < len(entry["min"]):
                bound.setdefault(symbol, [entry[kind][axis] for kind in KINDS])
    for tensor in missing:
        symbols = names.get(tensor["name"], [])
        sizes: list[list[int]] = []
        for axis, dim in enumerate(tensor["shape"]):
            symbol = symbols[axis] if axis < len(symbols) else None
            if dim >= 0:
                sizes.append([dim] * len(KINDS))
            elif symbol is not None and symbol in bound:
                sizes.append(bound[symbol])
            else:
                break
        else:
            profile[tensor["name"]] = {
                kind: [size[k] for size in sizes] for k, kind in enumerate(KINDS)
            }


def _check_named(profile: Profile, names: DimNames) -> None:
    """Inputs sharing a named dim give it the same min, opt and max (TensorRT would refuse)."""
    seen: dict[str, tuple[str, list[int]]] = {}
    for name, entry in profile.items():
        for axis, symbol in enumerate(names.get(name, [])):
            if symbol is None or axis >= len(entry["min"]):
                continue
            sizes = [entry[kind][axis] for kind in KINDS]
            where = f"{name} dim {axis}"
            first = seen.setdefault(symbol, (where, sizes))
            if first[1] != sizes:
                shown = [
                    str(s[0]) if len(set(s)) == 1 else "/".join(map(str, s))
                    for s in (first[1], sizes)
                ]
                raise UsageError(
                    f"input_shape gives dimension '{symbol}' two values: {shown[0]} "
                    f"({first[0]}) and {shown[1]} ({where}); inputs sharing a named dimension "
                    "must agree: give both the same size"
                )


def name_unknown_dims(
    src: Path, dst: Path, report: Report
) -> tuple[Path, DimNames, dict[str, Any]]:
    """``src``, or a copy at ``dst`` whose unnamed input dims have names of their own (TensorRT
    would tie all ``"?"`` dims together); also each input's named dims and what was renamed."""
    model = load_model(src, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    taken = {
        d.dim_param
        for v in (*model.graph.input, *model.graph.output)
        for d in v.type.tensor_type.shape.dim
        if d.HasField("dim_param")
    }
    names: DimNames = {}
    renamed: dict[str, Any] = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        axes: list[str | None] = []
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_param") and not is_named_dim(dim.dim_param):
                fresh, count = f"{value.name}_dim{axis}", 1
                while fresh in taken:
                    fresh, count = f"{value.name}_dim{axis}_{count}", count + 1
                taken.add(fresh)
                renamed.setdefault(value.name, {})[str(axis)] = fresh
                dim.dim_param = fresh
                axes.append(None)
            else:
                axes.append(dim.dim_param if dim.HasField("dim_param") else None)
        names[value.name] = axes
    if not renamed:
        return src, names, {}
    for value in model.graph.output:
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and not is_named_dim(dim.dim_param):
                dim.Clear()
    listed = "; ".join(
        f"{k} dims {', '.join(f'{a} as {n!r}' for a, n in v.items())}" for k, v in renamed.items()
    )
    report.info(
        f"unnamed dynamic dims given names of their own so TensorRT keeps them apart: {listed}"
    )
    if uses_external_data(model):
        full = load_model(src)
        for mine, theirs in zip(model.graph.input, full.graph.input):
            theirs.CopyFrom(mine)
        replace_items(full.graph.output, model.graph.output)
        model = full
    save_model(model, dst)
    return dst, names, renamed


def optimization_profile(builder: Any, shapes: Profile) -> Any:
    profile = builder.create_optimization_profile()
    for name, entry in shapes.items():
        profile.set_shape(name, entry["min"], entry["opt"], entry["max"])
    return profile
