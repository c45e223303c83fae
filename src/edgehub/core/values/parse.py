"""Reading typed values: `parse` turns command-line text into a value of an annotated type
(``runs=200``, ``input_shape=1,3,224,224``, ``precision=fp16``), `from_data` a value read from
TOML or JSON (arrays become tuples, strings paths or enum members); `guess` reads text that has
no annotation."""

from __future__ import annotations

import contextlib
import enum
import json
import math
import re
import typing
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Literal

from edgehub.core.values.check import check
from edgehub.core.values.types import (
    ValueProblem,
    describe,
    first_fit,
    split_annotated,
    text_form,
    union_members,
)

_TRUE, _FALSE = ("true", "yes", "on"), ("false", "no", "off")
_INT = re.compile(r"[+-]?[0-9][0-9_]*")


def parse(text: str, tp: Any) -> Any:
    """Command-line text as a value of ``tp`` (checked, bounds included).

    Integers also accept a whole number written as a float (``1e3``); arrays are JSON
    (``[1, 2]``) or comma-separated (``1,3,224,224``); tables are JSON objects; ``none`` or
    ``null`` is ``None`` where ``None`` is allowed; a type carrying a `TextForm` reads its own
    spelling.
    """
    form = text_form(tp)
    value = form.read(text.strip()) if form is not None else _parse_plain(text.strip(), tp)
    check(value, tp)
    return value


def _parse_plain(text: str, tp: Any) -> Any:
    inner, _ = split_annotated(tp)
    members = union_members(inner)
    if members is not None:
        return first_fit(sorted(members, key=_preference), lambda m: parse(text, m), tp)
    try:
        return _parse_one(text, inner)
    except ValueProblem as problem:
        if inner is not tp and not problem.bound:
            raise ValueProblem(describe(tp)) from None
        raise


def _preference(tp: Any) -> int:
    """The order union members try a text: none, bool, numbers, choices, containers, str."""
    tp, _ = split_annotated(tp)
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
        with contextlib.suppress(ValueError):
            return tuple(int(part) for part in text.split(","))
    if text.lower() in ("none", "null"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return tuple(value) if isinstance(value, list) else value


def from_data(value: Any, tp: Any) -> Any:
    """``value`` as read from TOML or JSON, converted towards ``tp`` (arrays -> tuples where
    a tuple is expected, strings -> paths / enum members) and checked."""
    converted = _convert(value, tp)
    check(converted, tp)
    return converted


def _convert(value: Any, tp: Any) -> Any:
    tp, _ = split_annotated(tp)
    members = union_members(tp)
    if members is not None:
        plain = [split_annotated(m)[0] for m in members]
        if type(value) is int and float in plain and int not in plain:
            return float(value)
        with contextlib.suppress(ValueProblem):
            check(value, tp)
            return value  # fits as it is: keep it (a string stays a string in `Path | str`)
        for member in members:
            with contextlib.suppress(ValueProblem):
                return from_data(value, member)
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
