"""Profilers of the registered runtimes.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain. ``<Runtime>ProfilingMethod`` are aliases of `ProfilingMethod`.
"""

from typing import Any

from edgehub.core.runtimes import resolve_export
from edgehub.errors import ProfileError

__all__ = [
    "ONNXRuntimeProfiler",
    "ONNXRuntimeProfilingMethod",
    "ONNXRuntimeProfilingResult",
    "ProfileError",
    "ProfilingMethod",
    "TFLiteProfiler",
    "TFLiteProfilingResult",
    "TensorRTProfiler",
    "TensorRTProfilingMethod",
    "TensorRTProfilingResult",
]


def __getattr__(name: str) -> Any:
    try:
        if name.endswith("ProfilingMethod") and name in __all__:
            return resolve_export("ProfilingMethod", "profiler", __all__)
        return resolve_export(name, "profiler", __all__)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
