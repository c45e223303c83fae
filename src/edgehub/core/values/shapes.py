"""Input shapes as typed values, in the forms users type on every runtime.

`InputShape` (``input_shape``): a static shape for the first input, or input name → shape.
`InputShapeRange` (``input_shape_range``): input name → shape or ``{min, opt, max}`` shapes, or
one input's ``{min, opt, max}``. On the command line:

- ``1x3x224x224`` or ``1,3,224,224`` (the first input);
- ``x:1x3x48x192,y:1x4`` (one entry per input; ``;`` separates too, and a name may hold ``:``,
  as in ``input:0:1x3x224x224``);
- ranges: ``x:1x3x32x96/1x3x48x192/1x3x64x384`` (min/opt/max), or without the name for a
  one-input model;
- JSON: ``{"x": [1, 3, 48, 192]}``, ``{"x": {"min": [...], "opt": [...], "max": [...]}}``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from edgehub.core.values.check import check
from edgehub.core.values.parse import from_data
from edgehub.core.values.types import Range, TextForm, ValueProblem

__all__ = ["KINDS", "InputShape", "InputShapeRange", "read_input_shape", "read_shape_range"]

KINDS = ("min", "opt", "max")
_MAX_DIM = 10_000_000
_Dim = Annotated[int, Range(1, _MAX_DIM)]
_Shape = tuple[_Dim, ...]
_Plain = _Shape | dict[str, _Shape]
_PlainRange = dict[str, _Shape | dict[str, _Shape]]

SHAPE_FORMS = (
    "a shape such as 1x3x224x224 (the first input), one per input such as x:1x3x48x192,y:1x4, "
    'or JSON such as {"x": [1, 3, 48, 192]}'
)
RANGE_FORMS = (
    "min/opt/max shapes per input such as x:1x3x32x96/1x3x48x192/1x3x64x384 (several "
    'separated by ","; the name may be left out for a one-input model), or JSON such as '
    '{"x": {"min": [1, 3, 32, 96], "opt": [1, 3, 48, 192], "max": [1, 3, 64, 384]}}'
)
_DIMS = re.compile(r"[0-9]+(?:\s*[xX*,]\s*[0-9]+)*")


def _problem(forms: str, detail: str) -> ValueProblem:
    return ValueProblem(f"{forms} ({detail})", bound=True)


def _json(text: str, tp: Any, forms: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        raise _problem(forms, "not valid JSON") from None
    try:
        return from_data(value, tp)
    except ValueProblem:
        raise _problem(forms, "every dimension a positive integer") from None


def _dims(text: str, forms: str) -> tuple[int, ...]:
    text = text.strip()
    if not text:
        raise _problem(forms, "no dimensions given")
    if not _DIMS.fullmatch(text):
        raise _problem(forms, f"{text!r} is not a shape: positive integers joined by 'x'")
    dims = tuple(int(d) for d in re.split(r"\s*[xX*,]\s*", text))
    if not all(1 <= d <= _MAX_DIM for d in dims):
        raise _problem(forms, f"every dimension must be between 1 and {_MAX_DIM}")
    return dims


def _entries(text: str, forms: str) -> list[tuple[str | None, str]]:
    """``name:dims`` entries (``None`` name: the text has no names); a part without ``:`` that
    follows a named entry continues its dims (``x:1,3,48,192``)."""
    parts = [p.strip() for p in re.split(r"[;,]", text)]
    if not any(":" in p for p in parts):
        return [(None, text.replace(";", ","))]
    entries: list[tuple[str | None, str]] = []
    for part in parts:
        if ":" in part:
            name, _, dims = part.rpartition(":")
            if not name.strip():
                raise _problem(forms, f"{part!r} has no input name before ':'")
            entries.append((name.strip(), dims))
        elif entries:
            name, dims = entries[-1]
            entries[-1] = (name, f"{dims},{part}")
        else:
            raise _problem(forms, f"{part!r} comes before any input name")
    names = [n for n, _ in entries]
    if len(set(names)) != len(names):
        raise _problem(forms, "an input is named twice")
    return entries


def read_input_shape(text: str) -> Any:
    """Command-line text of an `InputShape`."""
    if text.startswith(("{", "[")):
        return _json(text, _Plain, SHAPE_FORMS)
    entries = _entries(text, SHAPE_FORMS)
    if entries[0][0] is None:
        return _dims(entries[0][1], SHAPE_FORMS)
    return {name: _dims(dims, SHAPE_FORMS) for name, dims in entries}


def _range(text: str) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    parts = text.split("/")
    if len(parts) == 1:
        return _dims(text, RANGE_FORMS)
    if len(parts) != 3:
        raise _problem(RANGE_FORMS, f"{text!r} needs three shapes, min/opt/max")
    return dict(zip(KINDS, (_dims(p, RANGE_FORMS) for p in parts), strict=True))


def read_shape_range(text: str) -> Any:
    """Command-line text of an `InputShapeRange`."""
    if text.startswith("{"):
        value = _json(text, _PlainRange, RANGE_FORMS)
    else:
        entries = _entries(text, RANGE_FORMS)
        if entries[0][0] is None:
            one = _range(entries[0][1])
            if not isinstance(one, dict):
                raise _problem(RANGE_FORMS, "a range needs min/opt/max; or use input_shape")
            value = one
        else:
            value = {name: _range(dims) for name, dims in entries}
    check(value, _PlainRange)
    return value


InputShape = Annotated[_Plain, TextForm(read_input_shape, SHAPE_FORMS)]
InputShapeRange = Annotated[_PlainRange, TextForm(read_shape_range, RANGE_FORMS)]
