"""Invokers of the registered runtimes.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain.
"""

from typing import Any

from edgehub.core.runtimes import resolve_export
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


def __getattr__(name: str) -> Any:
    try:
        return resolve_export(name, "invoker", __all__)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
