"""Optimization profiles: the min / opt / max shapes of each dynamic network input.

``shapes`` is ``{input: {"min": [ints], "opt": [ints], "max": [ints]}}``; a plain list is one
shape for all three. Every input with a dynamic dimension (-1 in the parsed network) needs an
entry; each shape must have the input's rank, keep its fixed dimensions and satisfy
min <= opt <= max.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..protocol import UsageError

Profile = Dict[str, Dict[str, List[int]]]
KINDS = ("min", "opt", "max")


def _describe(tensor: dict[str, Any]) -> str:
    dims = ",".join("?" if d < 0 else str(d) for d in tensor["shape"])
    return f"{tensor['name']}[{dims}]"


def _shape(name: str, kind: str, value: Any, fixed: list[int]) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value
    ):
        raise UsageError(
            f"shapes: {kind} of '{name}' must be a list of positive ints, got {value!r}"
        )
    if len(value) != len(fixed):
        raise UsageError(
            f"shapes: {kind} of '{name}' has rank {len(value)}, the input has {len(fixed)}"
        )
    for axis, (got, want) in enumerate(zip(value, fixed)):
        if want >= 0 and got != want:
            raise UsageError(
                f"shapes: {kind} of '{name}' sets dim {axis} to {got}, "
                f"but the model fixes it to {want}"
            )
    return [int(d) for d in value]


def parse_shapes(raw: Any, inputs: list[dict[str, Any] | None]) -> Profile:
    """Validate ``raw`` against the network inputs; returns {input: {min, opt, max}}."""
    tensors = {t["name"]: t for t in inputs if t is not None}
    dynamic = [t for t in tensors.values() if any(d < 0 for d in t["shape"])]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise UsageError(f"shapes must be {{input: {{min, opt, max}}}}, got {raw!r}")
    profile: Profile = {}
    for name, entry in raw.items():
        tensor = tensors.get(name)
        if tensor is None:
            known = ", ".join(_describe(t) for t in tensors.values())
            raise UsageError(f"shapes names unknown input '{name}'; inputs: {known}")
        if isinstance(entry, list):
            entry = {kind: entry for kind in KINDS}
        if not isinstance(entry, dict) or sorted(entry) != sorted(KINDS):
            raise UsageError(
                f"shapes for '{name}' must have exactly min, opt and max, got {entry!r}"
            )
        shapes = {kind: _shape(name, kind, entry[kind], tensor["shape"]) for kind in KINDS}
        for axis in range(len(tensor["shape"])):
            low, mid, high = (shapes[kind][axis] for kind in KINDS)
            if not low <= mid <= high:
                raise UsageError(
                    f"shapes for '{name}' dim {axis}: need min <= opt <= max, "
                    f"got {low}, {mid}, {high}"
                )
        profile[name] = shapes
    missing = [t for t in dynamic if t["name"] not in profile]
    if missing:
        listed = ", ".join(_describe(t) for t in missing)
        raise UsageError(
            f"dynamic input(s) {listed} need an optimization profile: pass shapes="
            "{input: {min: [...], opt: [...], max: [...]}} for each"
        )
    return profile


def optimization_profile(builder: Any, shapes: Profile) -> Any:
    profile = builder.create_optimization_profile()
    for name, entry in shapes.items():
        profile.set_shape(name, entry["min"], entry["opt"], entry["max"])
    return profile
