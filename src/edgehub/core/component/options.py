"""Component options checked against their declared types, before any run starts.

An option's type is the annotation of its keyword-only parameter in ``run`` (the same as in
``__init__``). Bounds come from the annotation (``Annotated[int, Range(1, 100)]``), else from
``option_bounds``: a class attribute mapping option names to a `Range`, merged along the class
hierarchy. `Component` sets sensible bounds for the usual counts (``runs``, ``burn_ins``,
``cold_starts``, thread counts), so every profiler that uses these names is covered; a
subclass overrides or adds entries with its own ``option_bounds``. Options whose type cannot be
resolved (a name imported only for type checking) are not checked.

A value that does not fit is a one-line `UsageError` naming the component, the option, what it
must be and the value, raised by the constructor, by ``run`` (before the run opens), and by
`parse_option` (``hub exec --set``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from edgehub.core.values import Range, ValueProblem, check, parse, resolve
from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.component.base import Component

__all__ = [
    "DEFAULT_BOUNDS",
    "check_bounds_declaration",
    "check_options",
    "option_type",
    "option_types",
    "parse_option",
]

DEFAULT_BOUNDS: Mapping[str, Range] = {
    "runs": Range(1, 1_000_000),
    "burn_ins": Range(0, 100_000),
    "warmup": Range(0, 100_000),
    "warmup_runs": Range(0, 100_000),
    "cold_starts": Range(1, 1_000),
    "num_threads": Range(0, 1_024),
    "intra_op_threads": Range(0, 1_024),
    "inter_op_threads": Range(0, 1_024),
}
_UNCHECKED = ("device", "devices")


def option_types(cls: type[Component]) -> dict[str, Any]:
    """Each option's type, its bounds attached (resolved once per class)."""
    cached: dict[str, Any] | None = cls.__dict__.get("_option_types")
    if cached is not None:
        return cached
    run = cls._call_interface
    namespace = getattr(run, "__globals__", {})
    bounds: dict[str, Range] = {}
    for klass in reversed(cls.__mro__):
        bounds.update(klass.__dict__.get("option_bounds", {}))
    types: dict[str, Any] = {}
    for param in inspect.signature(run).parameters.values():
        if param.kind is not inspect.Parameter.KEYWORD_ONLY or param.name in _UNCHECKED:
            continue
        annotation = param.annotation
        tp = Any if annotation is inspect.Parameter.empty else resolve(annotation, namespace)
        if param.name in bounds and tp is not Any and Range not in _meta_types(tp):
            tp = Annotated[tp, bounds[param.name]]
        types[param.name] = tp
    cls._option_types = types  # type: ignore[attr-defined]
    return types


def _meta_types(tp: Any) -> set[type]:
    return {type(item) for item in getattr(tp, "__metadata__", ())}


def option_type(cls: type[Component], option: str) -> Any:
    """The declared type of ``option`` (`Any` when unknown or not checked)."""
    return option_types(cls).get(option, Any)


def _problem(cls: type[Component], option: str, problem: ValueProblem, shown: str) -> UsageError:
    return UsageError(f"{cls.__name__}: option {option!r} must be {problem.expected}, got {shown}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_options(cls: type[Component], values: Mapping[str, Any]) -> None:
    """Raise `UsageError` for the first option in ``values`` that does not fit its type."""
    types = option_types(cls)
    for option, value in values.items():
        tp = types.get(option)
        if tp is None:
            continue
        try:
            check(value, tp)
        except ValueProblem as problem:
            raise _problem(cls, option, problem, _show(value)) from None


def parse_option(cls: type[Component], option: str, text: str) -> Any:
    """Command-line ``text`` as a value of ``option`` (typed, bounds checked)."""
    tp = option_type(cls, option)
    try:
        return parse(text, tp)
    except ValueProblem as problem:
        raise _problem(cls, option, problem, repr(text.strip())) from None


def check_bounds_declaration(name: str, bounds: object, options: Mapping[str, Any]) -> None:
    """At class creation: ``option_bounds`` maps options of ``run`` to `Range` objects."""
    if not isinstance(bounds, Mapping):
        raise TypeError(f"{name}.option_bounds must be a dict of option name -> Range")
    for option, bound in bounds.items():
        if option not in options:
            raise TypeError(
                f"{name}.option_bounds names {option!r}, which is not an option of {name}.run; "
                f"options: {', '.join(sorted(options))}"
            )
        if not isinstance(bound, Range):
            raise TypeError(f"{name}.option_bounds[{option!r}] must be a Range, got {bound!r}")
