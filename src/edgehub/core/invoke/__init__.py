"""Invokers of the registered runtimes.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain.
"""

from edgehub.core.runtimes import lazy_exports
from edgehub.errors import InvokeError

__all__ = [
    "InvokeError",
    "ONNXRuntimeInvocationResult",
    "ONNXRuntimeInvoker",
    "TFLiteInvocationResult",
    "TFLiteInvoker",
    "TensorRTInvocationResult",
    "TensorRTInvoker",
]


__getattr__, __dir__ = lazy_exports(__name__, "invoker", __all__)
