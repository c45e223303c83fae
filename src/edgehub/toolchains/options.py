"""One declaration of a built-in component's options: its ``run`` lists them, its ``__init__``
is made from ``run``, and a provider takes ``**options`` and reads them with `read_options`; one
that serves only some names those (`provides`), so the dispatch refuses a value it would ignore.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any, TypeVar

from edgehub.core.component.base import Component
from edgehub.core.values import Range

F = TypeVar("F", bound=Callable[..., Any])
# the settings of ``until_stable`` a profiler may declare, sent to the agent as floats
STABILITY = ("stable_tolerance", "stable_max_s", "stable_window_s", "stable_max_other_share")
# their bounds, for a profiler's ``option_bounds``
STABILITY_BOUNDS = {
    "stable_tolerance": Range(0, 10),
    "stable_max_s": Range(0, 86_400),
    "stable_window_s": Range(0, 3_600),
    "stable_max_other_share": Range(0, 1),
}


class BuiltinComponent(Component):
    """The base of edgehub's own components: each declares ``run``, and its ``__init__`` is
    made from it (`Component.init_from_run`)."""

    init_from_run = True


def provides(component: type[Component], provider_type: str, *serves: str) -> Callable[[F], F]:
    """Register the decorated ``(ctx, <run's inputs>, **options)`` as ``component``'s provider
    for ``provider_type``, taking only the options ``serves`` names (and the device)."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    device = ("device", "devices")
    served = [
        inspect.Parameter(option, keyword, default=default)
        for option, default in component.keyword_options().items()
        if option in serves or option in device
    ]

    def register(fn: F) -> F:
        signature = inspect.signature(fn)
        inputs = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        fn.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*inputs, *served]
        )
        return component.provider(provider_type)(fn)

    return register


def read_options(component: type[Component], options: Mapping[str, Any]) -> Any:
    """``options`` as attributes, each one not given at its ``run`` default."""
    return SimpleNamespace(**{**component.keyword_options(), **options})


def stability_request(options: Any) -> dict[str, Any]:
    """The agent request's ``until_stable`` entries: none unless asked for, else each
    stability setting the profiler declares."""
    if not options.until_stable:
        return {}
    declared = {k: float(getattr(options, k)) for k in STABILITY if hasattr(options, k)}
    return {"until_stable": True, **declared}
