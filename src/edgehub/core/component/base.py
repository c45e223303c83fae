"""`Component`: the base of every compiler, profiler and invoker.

Subclasses declare ``run_type``, ``__init__`` and ``run``; the metaclass checks them when the
class is created and replaces ``run`` with a dispatcher to the provider registered for the
device's provider type (`Component.provider`). Option values are checked against ``run``'s
annotations and ``option_bounds`` (see `edgehub.core.component.options`).
"""

from __future__ import annotations

import functools
import importlib
from abc import ABCMeta
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from edgehub.core.component.options import (
    DEFAULT_BOUNDS,
    OptionSpec,
    check_bounds_declaration,
    check_known,
    check_options,
    option_specs,
)
from edgehub.core.component.registry import register_component
from edgehub.core.component.signature import (
    ProviderSignature,
    RunSignature,
    check_init,
    check_provider,
    init_signature,
    read_run,
)
from edgehub.core.values import Range
from edgehub.tracking.run_type import RunType

__all__ = ["Component", "ComponentMeta", "NoProviderError"]

F = TypeVar("F", bound=Callable[..., Any])


class NoProviderError(NotImplementedError):
    """The placeholder body of ``run``; the dispatcher replaces it and never raises it."""


class ComponentMeta(ABCMeta):
    """Checks a component's declaration at class creation and installs the dispatcher."""

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> ComponentMeta:
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if not bases or "run" not in namespace:
            return cls  # the base class itself, or a mixin / intermediate class
        if "run_type" not in namespace:
            raise TypeError(
                f"{name} must set run_type (a RunType member such as RunType.COMPILE, or a string)"
            )
        run_type = namespace["run_type"]
        if not isinstance(run_type, (RunType, str)) or (
            isinstance(run_type, Enum) and not isinstance(run_type, RunType)
        ):
            raise TypeError(
                f"{name}.run_type must be a RunType member or a string, got {run_type!r}"
            )
        signature = read_run(name, namespace["run"])
        if "__init__" in namespace:
            check_init(name, namespace["__init__"], signature)
        elif getattr(cls, "init_from_run", False):
            cls.__init__ = _init_from(namespace["run"])  # type: ignore[misc]
        else:
            raise TypeError(
                f"{name} must define __init__(self, *, name=None, <the options of run>)"
            )
        if "option_bounds" in namespace:
            check_bounds_declaration(name, namespace["option_bounds"], signature.options)
        for alias, option in namespace.get("option_aliases", {}).items():
            if alias not in signature.options or option not in signature.options:
                raise TypeError(f"{name}.option_aliases: {alias!r} and {option!r} must be options")
        original = namespace["run"]
        cls._run_signature = signature  # type: ignore[attr-defined]
        cls._call_interface = original  # type: ignore[attr-defined]
        cls._providers = {}  # type: ignore[attr-defined]
        cls._provider_modules = {}  # type: ignore[attr-defined]
        cls._provider_order = {}  # type: ignore[attr-defined]

        @functools.wraps(original)
        def run(self: Component, ctx: Any, *args: Any, **kwargs: Any) -> Any:
            from edgehub.core.component.dispatch import dispatch

            return dispatch(self, ctx, args, kwargs)

        cls.run = run  # type: ignore[attr-defined]
        cls.__abstractmethods__ = frozenset(getattr(cls, "__abstractmethods__", ())) - {"run"}
        register_component(cls)  # type: ignore[arg-type]
        return cls


def _init_from(run: Callable[..., Any]) -> Callable[..., None]:
    """`Component.__init__` under the signature the contract asks for of ``run``'s class."""

    def __init__(self: Component, **options: Any) -> None:
        Component.__init__(self, **options)

    __init__.__signature__ = init_signature(run)  # type: ignore[attr-defined]
    return __init__


class Component(metaclass=ComponentMeta):
    """Base class of toolchain components. See the module docstring."""

    run_type: RunType | str
    option_bounds: Mapping[str, Range] = DEFAULT_BOUNDS
    # another name of an option (alias -> option, both in ``run``; the alias defaults to None):
    # a value given under the alias is the option's, and the run records the name used
    option_aliases: Mapping[str, str] = {}
    # the runtime whose descriptor names this component, set when the registry loads it: its
    # runs record that runtime (what `hub runs rerun` re-creates them by)
    registered_runtime: str | None = None
    # True: a subclass declaring ``run`` may leave out ``__init__``, which is then made from
    # ``run`` (`Component.__init__` under the signature the contract asks for)
    init_from_run: bool = False
    _run_signature: RunSignature
    _call_interface: Callable[..., Any]
    _providers: dict[str, tuple[Callable[..., Any], ProviderSignature]]
    _provider_modules: dict[str, str]
    # each provider type once, in the order it was first registered or announced; True where
    # it counts as registered (`provider_module` with ``registered``)
    _provider_order: dict[str, bool]

    @classmethod
    def keyword_options(cls) -> dict[str, Any]:
        """The keyword options of ``run``, each with its default (a fresh dict)."""
        signature = getattr(cls, "_run_signature", None)
        return {} if signature is None else dict(signature.options)

    @classmethod
    def positional_names(cls) -> list[str]:
        """The names of ``run``'s positional parameters after ``ctx`` (a fresh list)."""
        signature = getattr(cls, "_run_signature", None)
        return [] if signature is None else list(signature.positional)

    @classmethod
    def declared_options(cls) -> dict[str, OptionSpec]:
        """The options a caller may give (all but the device parameter), each as declared:
        type, default, bounds, choices, whether a host path (a fresh dict)."""
        return dict(option_specs(cls)) if hasattr(cls, "_run_signature") else {}

    def __init__(self, **kwargs: Any) -> None:
        name = kwargs.pop("name", None)
        self._name = name if name is not None else type(self).__name__
        known = type(self).keyword_options()
        check_known(f"{type(self).__name__}()", kwargs, known)
        if known:
            check_options(type(self), kwargs)
        self._defaults = {**known, **kwargs}
        for key, value in kwargs.items():
            setattr(self, key, value)

    @property
    def name(self) -> str:
        return self._name

    if TYPE_CHECKING:  # the metaclass installs the real dispatcher on each component

        def run(self, ctx: Any, *args: Any, **kwargs: Any) -> Any: ...

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self._defaults.items() if v is not None)
        return f"{type(self).__name__}(name={self._name!r}{', ' if options else ''}{options})"

    @classmethod
    def providers(cls) -> list[str]:
        """The provider types registered (or announced) on this class, in the order each was
        first registered or announced."""
        return list(getattr(cls, "_provider_order", {}))

    @classmethod
    def provider_module(cls, provider_type: str, module: str, *, registered: bool = False) -> None:
        """Announce that importing ``module`` registers this class's provider for
        ``provider_type``; it is imported when such a device first runs the component (so a
        toolchain does not import every provider's dependencies for a local run).

        With ``registered``, the type counts as served from now on, as if ``module`` had been
        imported: registering another provider for it is refused as a duplicate."""
        key = cls._provider_key(provider_type)
        cls._provider_modules.setdefault(key, module)
        cls._provider_order.setdefault(key, registered)

    @classmethod
    def _provider_key(cls, provider_type: str) -> str:
        if "_providers" not in cls.__dict__:
            raise TypeError(f"{cls.__name__} declares no run(); register providers on a component")
        return str(provider_type.value if isinstance(provider_type, Enum) else provider_type)

    @classmethod
    def provider_for(
        cls, provider_type: str
    ) -> tuple[Callable[..., Any], ProviderSignature] | None:
        """The provider function for ``provider_type`` and its checked signature, importing an
        announced provider module first; None when there is none."""
        providers = getattr(cls, "_providers", {})
        if provider_type not in providers:
            module = getattr(cls, "_provider_modules", {}).get(provider_type)
            if module is None:
                return None
            importlib.import_module(module)
            if provider_type not in providers:
                raise TypeError(
                    f"{module} was announced to register {cls.__name__}'s provider for "
                    f"{provider_type!r} but did not"
                )
        entry: tuple[Callable[..., Any], ProviderSignature] = providers[provider_type]
        return entry

    @classmethod
    def provider(cls, provider_type: str) -> Callable[[F], F]:
        """Register the decorated function as this component's provider for ``provider_type``.

        The function's signature is checked against ``run``: the same positional inputs by
        name and order, and only options ``run`` declares (it may leave some out, or take
        ``**kwargs``). A second provider for the same type is refused.
        """
        key = cls._provider_key(provider_type)
        if not key:
            raise ValueError("provider type must be a non-empty string")

        def decorator(fn: F) -> F:
            if key not in cls._providers and cls._provider_order.get(key):
                importlib.import_module(cls._provider_modules[key])  # the one it counts as
            if key in cls._providers:
                existing = cls._providers[key][0]
                raise ValueError(
                    f"Duplicate provider type {key!r} for {cls.__name__}: already served by "
                    f"{getattr(existing, '__qualname__', existing)!r}"
                )
            signature = check_provider(cls.__name__, key, fn, cls._run_signature)
            cls._providers[key] = (fn, signature)
            cls._provider_order.setdefault(key, True)
            return fn

        return decorator
