"""`check`: whether a Python value fits an annotation (a `ValueProblem` saying what it must be
if not)."""

from __future__ import annotations

import enum
import math
import os
import typing
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Literal

from edgehub.core.values.types import (
    Matches,
    Range,
    ValueProblem,
    describe,
    first_fit,
    split_annotated,
    union_members,
)


def check(value: Any, tp: Any) -> None:
    """Raise `ValueProblem` unless ``value`` fits ``tp`` (see the module docstring)."""
    full = tp
    tp, meta = split_annotated(tp)
    members = union_members(tp)
    if members is not None:
        first_fit(members, lambda member: check(value, member), full)
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
    elif isinstance(tp, type) and typing.Protocol not in tp.__bases__:  # not a protocol
        ok = isinstance(value, origin or tp) if origin is None or isinstance(origin, type) else True
    else:
        return
    if not ok:
        raise ValueProblem(describe(tp))
