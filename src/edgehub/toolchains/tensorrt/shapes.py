"""TensorRTCompiler's shape options as the providers send them on: ``input_shape`` (static) and
``input_shape_range`` (min/opt/max per input), with ``input_shapes`` (the old name of the range)
still taken, with a deprecation line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgehub.core.values.shapes import KINDS
from edgehub.errors import UsageError
from edgehub.toolchains.tensors import plain_shape

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


DEPRECATED = (
    "input_shapes is deprecated: use input_shape_range (the same forms), or input_shape for "
    "one static shape"
)


def _shape(value: Any) -> list[int]:
    return [int(d) for d in value]


def _ranges(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UsageError(
            "input_shape_range must map each dynamic input to min/opt/max shapes, e.g. "
            "input_shape_range=x:1x3x32x96/1x3x48x192/1x3x64x384; for one static shape use "
            "input_shape=1x3x48x192"
        )
    out: dict[str, Any] = {}
    for name, entry in value.items():
        if name in KINDS and not isinstance(entry, dict):
            out[name] = _shape(entry)  # one input's {min, opt, max}: the agent names it
        elif isinstance(entry, dict):
            out[str(name)] = {str(kind): _shape(shape) for kind, shape in entry.items()}
        else:
            out[str(name)] = _shape(entry)
    return out


def shape_options(
    ctx: HubContext, input_shape: Any, input_shape_range: Any, input_shapes: Any
) -> tuple[list[int] | dict[str, list[int]] | None, dict[str, Any] | None]:
    """(``input_shape``, ``input_shape_range``) as JSON-ready values; ``input_shapes`` counts as
    the range, after a deprecation line."""
    if input_shapes is not None:
        if input_shape_range is not None and input_shape_range != input_shapes:
            raise UsageError(
                "input_shapes is the old name of input_shape_range: give only input_shape_range"
            )
        ctx.events.warning(DEPRECATED)
        input_shape_range = input_shapes
    return plain_shape(input_shape), _ranges(input_shape_range)


def runtime_shapes(input_shape: Any) -> dict[str, list[int]] | None:
    """The profiler's ``input_shape``: the shapes a dynamic engine runs at, by input name (an
    engine's input names come from trtexec, which takes ``--shapes=NAME:DIMS`` only)."""
    if input_shape is None:
        return None
    if not isinstance(input_shape, dict):
        raise UsageError(
            "TensorRTProfiler takes input_shape by input name (trtexec's --shapes): give "
            'input_shape=NAME:1x3x224x224 (or JSON {"NAME": [1, 3, 224, 224]})'
        )
    for name in input_shape:
        if any(c in str(name) for c in ",:"):
            raise UsageError(f"input name {name!r} contains ',' or ':', which trtexec cannot take")
    return {str(k): _shape(v) for k, v in input_shape.items()}


def shapes_flag(shapes: dict[str, list[int]] | None) -> list[str]:
    """``--shapes=x:1x3x48x192,y:1x4`` for trtexec (nothing without shapes)."""
    if not shapes:
        return []
    return ["--shapes=" + ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())]
