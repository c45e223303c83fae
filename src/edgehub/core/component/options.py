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

`option_specs` is the declaration every front end reads (``Component.declared_options``): each
option's type, default, bounds, choices, whether it is a host path, and which option an alias
stands for. ``hub exec --set``, sweeps, the TUI's Run form and ops read it; none of them parses
annotation text or guesses a type from an option's name.
"""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any, Literal

from edgehub.core.values import (
    Range,
    TextForm,
    ValueProblem,
    check,
    describe,
    from_data,
    parse,
    resolve,
    split_annotated,
    union_members,
)
from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.component.base import Component

__all__ = [
    "DEFAULT_BOUNDS",
    "OptionSpec",
    "check_bounds_declaration",
    "check_options",
    "input_types",
    "option_specs",
    "option_type",
    "option_types",
    "parse_option",
    "read_option",
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
        tp = _resolved(param, namespace)
        bounded = any(isinstance(item, Range) for item in split_annotated(tp)[1])
        if param.name in bounds and tp is not Any and not bounded:
            tp = Annotated[tp, bounds[param.name]]
        types[param.name] = tp
    cls._option_types = types  # type: ignore[attr-defined]
    return types


@dataclass(frozen=True)
class OptionSpec:
    """One option of a component as ``run`` declares it (the device parameter excluded).

    ``type`` is the resolved annotation with its bounds attached (`Any` when it cannot be
    resolved); ``path`` says the option takes a file or directory on the host; ``choices``
    lists a `Literal`'s or an `Enum`'s values; ``alias_of`` names the option an alias stands
    for (``warmup`` for ``burn_ins``)."""

    name: str
    type: Any
    default: Any = None
    bounds: Range | None = None
    path: bool = False
    choices: tuple[str, ...] = ()
    alias_of: str | None = None

    @property
    def kind(self) -> str:
        """How a form shows it: bool, int, float, choice, list, path or text."""
        if self.choices:
            return "choice"
        if self.path:
            return "path"
        plain = _plain_members(self.type)
        if len(plain) == 1:
            (tp,) = plain
            if tp is bool:
                return "bool"
            if tp in (int, float):
                return str(tp.__name__)
            if typing.get_origin(tp) in (tuple, list):
                return "list"
        return "text"


def _plain_members(tp: Any) -> list[Any]:
    """The members of ``tp`` less None, each without its `Annotated` metadata."""
    inner = split_annotated(tp)[0]
    members = union_members(inner) or [inner]
    return [split_annotated(m)[0] for m in members if m is not type(None)]


def _is_path(tp: Any) -> bool:
    return any(isinstance(m, type) and issubclass(m, PurePath) for m in _plain_members(tp))


def _choices(tp: Any) -> tuple[str, ...]:
    plain = _plain_members(tp)
    if len(plain) != 1:
        return ()
    (tp,) = plain
    if typing.get_origin(tp) is Literal and all(isinstance(c, str) for c in typing.get_args(tp)):
        return typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tuple(str(m.value) for m in tp)
    return ()


def _bounds(tp: Any) -> Range | None:
    inner, meta = split_annotated(tp)
    for member in union_members(inner) or []:
        meta += split_annotated(member)[1]
    return next((item for item in meta if isinstance(item, Range)), None)


def option_specs(cls: type[Component]) -> dict[str, OptionSpec]:
    """The declaration of ``cls``'s options, in ``run``'s order (resolved once per class)."""
    cached: dict[str, OptionSpec] | None = cls.__dict__.get("_option_specs")
    if cached is not None:
        return cached
    types = option_types(cls)
    aliases = dict(cls.option_aliases)
    specs = {
        name: OptionSpec(
            name=name,
            type=types.get(name, Any),
            default=default,
            bounds=_bounds(types.get(name, Any)),
            path=_is_path(types.get(name, Any)),
            choices=_choices(types.get(name, Any)),
            alias_of=aliases.get(name),
        )
        for name, default in cls._run_signature.options.items()
        if name not in _UNCHECKED
    }
    cls._option_specs = specs  # type: ignore[attr-defined]
    return specs


def input_types(cls: type[Component]) -> dict[str, Any]:
    """``run``'s positional inputs after ``ctx``, each with its resolved type (`Any` when it
    cannot be resolved)."""
    run = cls._call_interface
    namespace = getattr(run, "__globals__", {})
    params = inspect.signature(run).parameters
    return {name: _resolved(params[name], namespace) for name in cls._run_signature.positional}


def _resolved(param: inspect.Parameter, namespace: Mapping[str, Any]) -> Any:
    """``param``'s annotation resolved in ``namespace`` (`Any` where it has none)."""
    annotation = param.annotation
    return Any if annotation is inspect.Parameter.empty else resolve(annotation, namespace)


def option_type(cls: type[Component], option: str) -> Any:
    """The declared type of ``option`` (`Any` when unknown or not checked)."""
    return option_types(cls).get(option, Any)


def _problem(cls: type[Component], option: str, problem: ValueProblem, shown: str) -> UsageError:
    return UsageError(f"{cls.__name__}: option {option!r} must be {problem.expected}, got {shown}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_known(label: str, given: Iterable[str], known: Collection[str]) -> None:
    """Refuse (`TypeError`) keyword arguments of ``label`` (a call) that are not ``known``."""
    unknown = set(given) - set(known)
    if unknown:
        raise TypeError(
            f"{label} got unexpected keyword arguments: {', '.join(sorted(unknown))}; known: "
            f"{', '.join(sorted(known))}"
        )


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


def read_option(cls: type[Component], option: str, value: Any) -> Any:
    """A value of ``option`` as given: text (``--set``, ``--vary``) is parsed by the declared
    type, data (a TOML value) converted by it; a declared path comes back as a `Path`."""
    if isinstance(value, str):
        value = parse_option(cls, option, value)
    else:
        tp = option_type(cls, option)
        try:
            value = from_data(value, tp)
        except ValueProblem as problem:
            parts = [tp, *(union_members(split_annotated(tp)[0]) or [])]
            formed = any(isinstance(m, TextForm) for p in parts for m in split_annotated(p)[1])
            shown = ValueProblem(describe(tp)) if formed else problem  # its forms, if it has
            raise _problem(cls, option, shown, _show(value)) from None
    spec = option_specs(cls).get(option)
    if spec is not None and spec.path and isinstance(value, str):
        value = Path(value)
    return value


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
