"""Backends: named bundles of graph-pattern lists, one per pipeline stage.

Installed packages announce backends through the ``edgehub.backends`` entry-point group; each
entry point loads a `Backend` (or a callable returning one). With a single backend installed
`get_backend` picks it; with several, call `set_backend` first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgehub.deploy.pattern import phase_of
from edgehub.errors import UsageError

__all__ = [
    "Backend",
    "BackendChoiceError",
    "UnknownBackendError",
    "discover_backends",
    "find_backend",
    "get_backend",
    "reset_backends",
    "set_backend",
]

ENTRY_POINT_GROUP = "edgehub.backends"


class UnknownBackendError(UsageError, ValueError):
    """No installed backend has the requested name."""


class BackendChoiceError(UsageError, RuntimeError):
    """No backend was selected and zero or several are installed."""


@dataclass(frozen=True)
class Backend:
    """Pattern classes for each stage. A pattern class may declare ``phase``; if it does, it
    must match the field it is listed in."""

    name: str
    conversion_patterns: Sequence[type[Any]] = ()
    fusion_patterns: Sequence[type[Any]] = ()
    smooth_patterns: Sequence[type[Any]] = ()
    quantized_patterns: Sequence[type[Any]] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a Backend needs a name")
        for stage in ("conversion", "fusion", "smooth", "quantized"):
            field_name = f"{stage}_patterns"
            for pattern in getattr(self, field_name):
                phase = phase_of(pattern)
                if phase is not None and phase != stage:
                    raise ValueError(
                        f"backend {self.name!r}: pattern {getattr(pattern, '__name__', pattern)}"
                        f" has phase {phase!r} but is listed in {field_name}"
                    )


_discovered: list[Backend] | None = None
_active: Backend | None = None
_registered: dict[str, Backend] = {}


def register_backend(backend: Backend) -> None:
    """Add a backend without packaging it (tests, notebooks); clears the discovery cache."""
    global _discovered
    _registered[backend.name] = backend
    _discovered = None


def discover_backends() -> list[Backend]:
    """Installed backends (entry points plus registered ones); cached after the first call."""
    global _discovered
    if _discovered is None:
        found = {backend.name: backend for backend in _installed()}
        found.update(_registered)
        _discovered = list(found.values())
    return list(_discovered)


def _installed() -> list[Backend]:
    """Backends announced through entry points (tests replace this to simulate installs)."""
    from importlib.metadata import entry_points

    found = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        loaded = entry.load()
        backend = loaded() if callable(loaded) and not isinstance(loaded, Backend) else loaded
        if isinstance(backend, Backend):
            found.append(backend)
    return found


def find_backend(name: str) -> Backend:
    """The installed backend called ``name`` (without selecting it); `ValueError` lists the
    installed ones."""
    for backend in discover_backends():
        if backend.name == name:
            return backend
    names = ", ".join(b.name for b in discover_backends()) or "none installed"
    raise UnknownBackendError(f"unknown backend {name!r}; installed: {names}")


def set_backend(name: str) -> None:
    """Select the active backend by name; `ValueError` lists the installed ones."""
    global _active
    _active = find_backend(name)


def get_backend() -> Backend:
    """The active backend; with none selected, the only installed one."""
    if _active is not None:
        return _active
    backends = discover_backends()
    if len(backends) == 1:
        return backends[0]
    if not backends:
        raise BackendChoiceError(
            "no backend installed; pip install one (e.g. -e backends/tensorrt) or call"
            " register_backend()"
        )
    names = ", ".join(b.name for b in backends)
    raise BackendChoiceError(f"several backends installed ({names}); call set_backend(name) first")


def reset_backends() -> None:
    """Forget discovered backends and the selection (and registered ones), e.g. between tests."""
    global _discovered, _active
    _discovered = None
    _active = None
    _registered.clear()
