"""Class-creation and provider-registration checks of component signatures."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ProviderSignature",
    "RunSignature",
    "check_init",
    "check_provider",
    "init_signature",
    "read_run",
]

_P = inspect.Parameter


@dataclass(frozen=True)
class RunSignature:
    """What ``run`` declares after ``self, ctx``."""

    positional: tuple[str, ...]
    options: dict[str, Any]  # keyword-only name -> default (device/devices included)
    device_param: str  # "device" or "devices"


@dataclass(frozen=True)
class ProviderSignature:
    """Which of ``run``'s options a provider accepts."""

    accepts: frozenset[str]
    var_keyword: bool


def _names(names: set[str] | list[str]) -> str:
    return ", ".join(sorted(names)) or "-"


def read_run(cls_name: str, run: Callable[..., Any]) -> RunSignature:
    params = list(inspect.signature(run).parameters.values())
    if len(params) < 2 or params[1].kind not in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
        raise TypeError(f"{cls_name}.run must take (self, ctx: HubContext, ...)")
    ctx = params[1]
    annotation = ctx.annotation
    if annotation is not _P.empty:
        label = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if label.split(".")[-1] != "HubContext":
            raise TypeError(
                f"{cls_name}.run: its second parameter {ctx.name!r} must be annotated "
                f"HubContext, not {label or annotation!r}"
            )
    positional: list[str] = []
    options: dict[str, Any] = {}
    for p in params[2:]:
        if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            raise TypeError(f"{cls_name}.run must not take *{p.name} or **{p.name}")
        if p.kind == _P.KEYWORD_ONLY:
            options[p.name] = None if p.default is _P.empty else p.default
        else:
            positional.append(p.name)
    device_params = [n for n in ("device", "devices") if n in options]
    if len(device_params) != 1:
        problem = "declares both" if device_params else "is missing"
        raise TypeError(
            f"{cls_name}.run {problem} the keyword-only device parameter: declare exactly one "
            "of 'device' (one device) or 'devices' (several)"
        )
    if "name" in options:
        raise TypeError(f"{cls_name}.run must not take 'name': it belongs to __init__ only")
    return RunSignature(tuple(positional), options, device_params[0])


def init_signature(run: Callable[..., Any]) -> inspect.Signature:
    """The ``__init__`` signature the contract asks for: ``(self, *, name=None, <run's
    options>)``."""
    params = list(inspect.signature(run).parameters.values())
    options = [p for p in params if p.kind is _P.KEYWORD_ONLY]
    name = _P("name", _P.KEYWORD_ONLY, default=None, annotation="str | None")
    return inspect.Signature([params[0], name, *options], return_annotation="None")


def check_init(cls_name: str, init: Callable[..., Any], run: RunSignature) -> None:
    """``__init__``'s keyword-only parameters are ``name`` plus exactly ``run``'s options."""
    params = inspect.signature(init).parameters.values()
    keyword = {p.name for p in params if p.kind == _P.KEYWORD_ONLY}
    expected = set(run.options) | {"name"}
    missing, extra = expected - keyword, keyword - expected
    if missing or extra:
        raise TypeError(
            f"{cls_name}.__init__ keyword-only parameters must be 'name' plus those of "
            f"{cls_name}.run; missing: {_names(missing)}; extra: {_names(extra)}"
        )


def check_provider(
    cls_name: str, provider_type: str, fn: Callable[..., Any], run: RunSignature
) -> ProviderSignature:
    """A provider takes ctx, ``run``'s positional inputs by name and order, and options."""
    label = f"provider {getattr(fn, '__name__', fn)!r} for {cls_name} ({provider_type!r})"
    params = list(inspect.signature(fn).parameters.values())
    if not params or params[0].kind not in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
        raise TypeError(f"{label} must take ctx as its first parameter")
    positional = [
        p.name for p in params[1:] if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
    ]
    if any(p.kind == _P.VAR_POSITIONAL for p in params):
        raise TypeError(f"{label} must not take *args; name the inputs {list(run.positional)}")
    if positional != list(run.positional):
        raise TypeError(
            f"{label} must take the positional inputs {list(run.positional)} in that order, "
            f"got {positional}"
        )
    keyword = {p.name for p in params if p.kind == _P.KEYWORD_ONLY}
    if "name" in keyword:
        raise TypeError(f"{label} must not take 'name'")
    unknown = keyword - set(run.options)
    if unknown:
        raise TypeError(
            f"{label} takes options that {cls_name}.run does not declare: {_names(unknown)}; "
            f"known: {_names(set(run.options))}"
        )
    var_keyword = any(p.kind == _P.VAR_KEYWORD for p in params)
    return ProviderSignature(frozenset(keyword), var_keyword)
