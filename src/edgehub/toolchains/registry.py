"""The runtimes `hub exec` knows: the registry of `edgehub.core.runtimes`, re-exported for the
toolchain layer (see there for how a package registers a runtime)."""

from __future__ import annotations

from edgehub.core.runtimes import (
    ENTRY_POINT_GROUP,
    RuntimeDescriptor,
    all_runtimes,
    get_runtime,
    reset_runtimes,
    runtime_names,
    runtime_problems,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "Runtime",
    "RuntimeDescriptor",
    "all_runtimes",
    "get_runtime",
    "reset_runtimes",
    "runtime_names",
    "runtime_problems",
]

Runtime = RuntimeDescriptor
