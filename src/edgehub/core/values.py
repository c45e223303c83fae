"""Values checked against type annotations: component options and provider settings.

`check` tests a Python value against an annotation (``int``, ``float``, ``bool``, ``str``,
``Path``, ``Literal``, an `Enum`, ``None``, unions, ``tuple``/``list``/``dict`` of those);
`parse` turns command-line text into such a value; `from_data` takes a value read from TOML or
JSON (arrays become tuples, strings become paths or enum members). Bounds and formats ride on
``typing.Annotated``: ``Annotated[int, Range(1, 1_000_000)]``, ``Annotated[str, Matches(...)]``.
Each raises `ValueProblem` whose ``expected`` completes "must be ...". Annotations this module
does not understand (``np.ndarray``, a protocol, an unresolved name) accept any value.
"""

from __future__ import annotations

import enum
import json
import math
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union

__all__ = [
    "Matches",
    "Range",
    "ValueProblem",
    "check",
    "describe",
    "from_data",
    "parse",
    "resolve",
    "without_none",
]


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
    try:
        return eval(annotation, dict(namespace))  # annotations are the module's own source
    except Exception:
        pass
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
    members = _members(tp)
    if members is None:
        return tp
    kept = [m for m in members if m is not type(None)]
    return kept[0] if len(kept) == 1 else Union[tuple(kept)]  # noqa: UP007


def _unpack(tp: Any) -> tuple[Any, list[Any]]:
    """``Annotated[T, *meta]`` -> (T, meta); anything else -> (tp, [])."""
    if typing.get_origin(tp) is Annotated:
        return tp.__origin__, list(tp.__metadata__)
    return tp, []


def _members(tp: Any) -> list[Any] | None:
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return list(typing.get_args(tp))
    return None


def _plural(text: str) -> str:
    """ "an array of integers" -> "arrays of integers"; other texts as "values (...)"."""
    for article in ("an ", "a "):
        if text.startswith(article):
            first, _, rest = text[len(article) :].partition(" ")
            return f"{first}s {rest}".rstrip()
    return f"values ({text})"


def describe(tp: Any) -> str:
    """What a value of ``tp`` is, in words: "an integer between 1 and 100", "a path or none"."""
    tp, meta = _unpack(tp)
    members = _members(tp)
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


def check(value: Any, tp: Any) -> None:
    """Raise `ValueProblem` unless ``value`` fits ``tp`` (see the module docstring)."""
    full = tp
    tp, meta = _unpack(tp)
    members = _members(tp)
    if members is not None:
        problems = []
        for member in members:
            try:
                check(value, member)
            except ValueProblem as problem:
                problems.append(problem)
                continue
            break
        else:
            raise next((p for p in problems if p.bound), ValueProblem(describe(tp)))
    else:
        try:
            _check_plain(value, tp)
        except ValueProblem as problem:
            if meta and not problem.bound:
                raise ValueProblem(describe(full)) from None
            raise
    for item in meta:
        if isinstance(item, Range) and isinstance(value, (int, float)) and not item.holds(value):
            raise ValueProblem(item.describe(), bound=True)
        if isinstance(item, Matches) and isinstance(value, str) and not item.holds(value):
            raise ValueProblem(item.description, bound=True)


def _check_plain(value: Any, tp: Any) -> None:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    ok: bool
    if tp is Any or isinstance(tp, (str, typing.ForwardRef, typing.TypeVar)):
        return
    if tp is type(None) or tp is None:
        ok = value is None
    elif tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
    elif isinstance(tp, type) and issubclass(tp, PurePath):
        ok = isinstance(value, (str, os.PathLike))
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        ok = isinstance(value, tp) or value in {m.value for m in tp}
    elif origin is Literal:
        ok = any(value == a and type(value) is type(a) for a in args)
    elif origin in (tuple, list):
        if not isinstance(value, (tuple, list)):
            raise ValueProblem(describe(tp))
        if args and origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise ValueProblem(describe(tp))
            for item, item_tp in zip(value, args, strict=True):
                check(item, item_tp)
        elif args:
            for item in value:
                check(item, args[0])
        return
    elif origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise ValueProblem(describe(tp))
        if len(args) == 2:
            for key, item in value.items():
                check(key, args[0])
                check(item, args[1])
        return
    elif isinstance(tp, type) and not getattr(tp, "_is_protocol", False):
        ok = isinstance(value, origin or tp) if origin is None or isinstance(origin, type) else True
    else:
        return
    if not ok:
        raise ValueProblem(describe(tp))


def from_data(value: Any, tp: Any) -> Any:
    """``value`` as read from TOML or JSON, converted towards ``tp`` (arrays -> tuples where
    a tuple is expected, strings -> paths / enum members) and checked."""
    converted = _convert(value, tp)
    check(converted, tp)
    return converted


def _convert(value: Any, tp: Any) -> Any:
    tp, _ = _unpack(tp)
    members = _members(tp)
    if members is not None:
        plain = [_unpack(m)[0] for m in members]
        if type(value) is int and float in plain and int not in plain:
            return float(value)
        try:
            check(value, tp)
            return value  # fits as it is: keep it (a string stays a string in `Path | str`)
        except ValueProblem:
            pass
        for member in members:
            try:
                return from_data(value, member)
            except ValueProblem:
                continue
        return value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is float and type(value) is int:
        return float(value)
    if isinstance(value, str) and isinstance(tp, type) and issubclass(tp, (PurePath, enum.Enum)):
        return parse(value, tp)
    if isinstance(value, list) and origin in (tuple, list):
        homogeneous = not args or origin is list or (len(args) == 2 and args[1] is Ellipsis)
        if homogeneous:
            items = [_convert(item, args[0]) if args else item for item in value]
        else:
            items = [_convert(item, a) for item, a in zip(value, args, strict=False)]
        return tuple(items) if origin is tuple else items
    if isinstance(value, Mapping) and (origin is dict or tp is dict) and len(args) == 2:
        return {k: _convert(v, args[1]) for k, v in value.items()}
    return value


_TRUE, _FALSE = ("true", "yes", "on"), ("false", "no", "off")
_INT = re.compile(r"[+-]?[0-9][0-9_]*")


def parse(text: str, tp: Any) -> Any:
    """Command-line text as a value of ``tp`` (checked, bounds included).

    Integers also accept a whole number written as a float (``1e3``); arrays are JSON
    (``[1, 2]``) or comma-separated (``1,3,224,224``); tables are JSON objects; ``none`` or
    ``null`` is ``None`` where ``None`` is allowed.
    """
    value = _parse_plain(text.strip(), tp)
    check(value, tp)
    return value


def _parse_plain(text: str, tp: Any) -> Any:
    inner, _ = _unpack(tp)
    members = _members(inner)
    if members is not None:
        problems = []
        for member in sorted(members, key=_preference):
            try:
                return parse(text, member)
            except ValueProblem as problem:
                problems.append(problem)
        raise next((p for p in problems if p.bound), ValueProblem(describe(tp)))
    try:
        return _parse_one(text, inner)
    except ValueProblem as problem:
        if inner is not tp and not problem.bound:
            raise ValueProblem(describe(tp)) from None
        raise


def _preference(tp: Any) -> int:
    """The order union members try a text: none, bool, numbers, choices, containers, str."""
    tp, _ = _unpack(tp)
    origin = typing.get_origin(tp)
    order: list[Any] = [type(None), bool, int, float]
    if tp in order:
        return order.index(tp)
    if origin is Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        return 4
    if origin in (tuple, list, dict) or tp is dict:
        return 5
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return 6
    return 8 if tp is Any else 7


def _parse_one(text: str, tp: Any) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    lowered = text.lower()
    if tp is Any or isinstance(tp, (str, typing.ForwardRef, typing.TypeVar)):
        return guess(text)
    if tp is type(None) or tp is None:
        if lowered in ("none", "null"):
            return None
    elif tp is bool:
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
    elif tp is int:
        if _INT.fullmatch(text):
            return int(text)
        number = _float(text)
        if number is not None and math.isfinite(number) and number.is_integer():
            return int(number)
    elif tp is float:
        number = _float(text)
        if number is not None and math.isfinite(number):
            return number
    elif tp is str:
        return text
    elif isinstance(tp, type) and issubclass(tp, PurePath):
        return tp(text)
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if lowered in (str(member.value).lower(), member.name.lower()):
                return member
    elif origin is Literal:
        for choice in args:
            if str(choice) == text or str(choice).lower() == lowered:
                return choice
    elif origin in (tuple, list):
        if text.startswith("["):
            return from_data(_json(text, tp), tp)
        items = [part.strip() for part in text.split(",")] if text else []
        item_types = args if args and not (len(args) == 2 and args[1] is Ellipsis) else None
        if item_types is not None and len(item_types) != len(items):
            raise ValueProblem(describe(tp))
        try:
            parsed = [
                parse(item, item_types[i] if item_types else (args[0] if args else Any))
                for i, item in enumerate(items)
            ]
        except ValueProblem as problem:
            if problem.bound:
                raise
            raise ValueProblem(describe(tp)) from None
        return tuple(parsed) if origin is tuple else parsed
    elif origin is dict or tp is dict:
        return from_data(_json(text, tp), tp)
    raise ValueProblem(describe(tp))


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _json(text: str, tp: Any) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ValueProblem(describe(tp) + " (as JSON)") from None


def guess(text: str) -> Any:
    """Text of an option whose type is unknown: JSON where it parses, ``1,3,224`` as a tuple of
    integers, ``none``/``null`` as ``None``, else the string."""
    if "," in text and not text.startswith(("[", "{")):
        try:
            return tuple(int(part) for part in text.split(","))
        except ValueError:
            pass
    if text.lower() in ("none", "null"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return tuple(value) if isinstance(value, list) else value
