"""The annotation vocabulary of typed values: `Range`, `Matches` and `TextForm` (bounds, formats
and command-line spellings carried in ``typing.Annotated``), `ValueProblem`, resolving postponed
annotations, and `describe` (what an annotation expects, in words)."""

from __future__ import annotations

import contextlib
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union


@dataclass(frozen=True)
class Range:
    """Bounds of a number: ``Range(1, 1_000_000)`` (inclusive), ``Range(0, open_low=True)``."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False

    def holds(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        low, high = _number(self.low), _number(self.high)
        if self.open_low:
            return f"greater than {low}" + (f" and at most {high}" if high is not None else "")
        if low is not None and high is not None:
            return f"between {low} and {high}"
        return f"at least {low}" if low is not None else f"at most {high}"


@dataclass(frozen=True)
class Matches:
    """A string format: ``Matches(r"[0-9]+[kmg]?", 'a size like "4g"')``."""

    pattern: str
    description: str

    def holds(self, value: str) -> bool:
        return re.fullmatch(self.pattern, value, re.IGNORECASE) is not None


@dataclass(frozen=True)
class TextForm:
    """A value's own command-line spelling: ``read`` turns text into the value (or raises
    `ValueProblem`); ``description`` completes "must be ..." for it."""

    read: Callable[[str], Any]
    description: str


def text_form(tp: Any) -> TextForm | None:
    """The `TextForm` an annotation carries, if any."""
    return next((m for m in split_annotated(tp)[1] if isinstance(m, TextForm)), None)


class ValueProblem(ValueError):
    """A value does not fit; ``expected`` completes "must be ..."."""

    def __init__(self, expected: str, *, bound: bool = False) -> None:
        super().__init__(expected)
        self.expected = expected
        self.bound = bound  # the type fits, a `Range` or `Matches` does not


def _number(value: float | None) -> str | None:
    if value is None:
        return None
    return str(int(value)) if float(value).is_integer() else str(value)


def resolve(annotation: Any, namespace: Mapping[str, Any]) -> Any:
    """A (possibly string) annotation evaluated in ``namespace``; parts of a union that do not
    resolve become `Any`, and so does an annotation that does not resolve at all."""
    if not isinstance(annotation, str):
        return annotation
    with contextlib.suppress(Exception):
        return eval(annotation, dict(namespace))  # annotations are the module's own source
    parts = _split_union(annotation)
    if len(parts) < 2:
        return Any
    return Union[tuple(resolve(part, namespace) for part in parts)]  # noqa: UP007


def _split_union(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        if char == "|" and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def without_none(tp: Any) -> Any:
    """``tp`` less ``None`` (for formats such as TOML that have no null)."""
    members = union_members(tp)
    if members is None:
        return tp
    kept = [m for m in members if m is not type(None)]
    return kept[0] if len(kept) == 1 else Union[tuple(kept)]  # noqa: UP007


def split_annotated(tp: Any) -> tuple[Any, list[Any]]:
    """``Annotated[T, *meta]`` -> (T, meta) (the bounds and formats); anything else -> (tp, [])."""
    if typing.get_origin(tp) is Annotated:
        return tp.__origin__, list(tp.__metadata__)
    return tp, []


def union_members(tp: Any) -> list[Any] | None:
    """The members of a union annotation (``None`` included as ``NoneType``), else None."""
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return list(typing.get_args(tp))
    return None


def first_fit(members: list[Any], attempt: Callable[[Any], Any], union: Any) -> Any:
    """What ``attempt`` gives for the first member of ``union`` it takes without a
    `ValueProblem`; else the first problem of a bound, or what ``union`` expects."""
    problems = []
    for member in members:
        try:
            return attempt(member)
        except ValueProblem as problem:
            problems.append(problem)
    raise next((p for p in problems if p.bound), ValueProblem(describe(union)))


def _plural(text: str) -> str:
    """ "an array of integers" -> "arrays of integers"; other texts as "values (...)"."""
    for article in ("an ", "a "):
        if text.startswith(article):
            first, _, rest = text[len(article) :].partition(" ")
            return f"{first}s {rest}".rstrip()
    return f"values ({text})"


def describe(tp: Any) -> str:
    """What a value of ``tp`` is, in words: "an integer between 1 and 100", "a path or none"."""
    form = text_form(tp)
    if form is not None:
        return form.description
    tp, meta = split_annotated(tp)
    members = union_members(tp)
    if members is not None:
        return " or ".join(dict.fromkeys(describe(m) for m in members))
    text = _describe_plain(tp)
    for item in meta:
        if isinstance(item, Range):
            text += f" {item.describe()}"
        elif isinstance(item, Matches):
            text = item.description
    return text


def _describe_plain(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None) or tp is None:
        return "none"
    if tp is bool:
        return "true or false"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return "a path"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (tuple, list) and args:
        item = describe(args[0])
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return f"an array of {len(args)} values"
        return f"an array of {_plural(item)}"
    if origin in (tuple, list):
        return "an array"
    if origin is dict and len(args) == 2:
        return f"a table of {_plural(describe(args[1]))}"
    if origin is dict or tp is dict:
        return "a table"
    return getattr(tp, "__name__", str(tp))
