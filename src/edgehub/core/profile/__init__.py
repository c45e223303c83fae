"""Profilers of the registered runtimes.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain. ``<Runtime>ProfilingMethod`` are aliases of `ProfilingMethod`.
"""

from edgehub.core.runtimes import lazy_exports
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


__getattr__, __dir__ = lazy_exports(
    __name__,
    "profiler",
    __all__,
    aliases={n: "ProfilingMethod" for n in __all__ if n.endswith("ProfilingMethod")},
)
