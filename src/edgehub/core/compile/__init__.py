"""Compilers of the registered runtimes.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain; ``from edgehub.core.compile import ONNXRuntimeCompiler`` loads the
runtimes (and registers their providers) then.
"""

from edgehub.core.runtimes import lazy_exports
from edgehub.errors import CompileError

__all__ = [
    "CompileError",
    "ONNXRuntimeCompiledModel",
    "ONNXRuntimeCompiler",
    "TFLiteCompiledModel",
    "TFLiteCompiler",
    "TensorRTCompiledModel",
    "TensorRTCompiler",
]


__getattr__, __dir__ = lazy_exports(__name__, "compiler", __all__)
