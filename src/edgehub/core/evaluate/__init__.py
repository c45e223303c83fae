"""Evaluators of the registered runtimes: a compiled model's accuracy on a dataset.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain.
"""

from typing import Any

from edgehub.core.runtimes import resolve_export
from edgehub.errors import InputDataError

__all__ = [
    "EvaluationResult",
    "InputDataError",
    "ONNXRuntimeEvaluator",
    "TFLiteEvaluator",
    "TensorRTEvaluator",
]


def __getattr__(name: str) -> Any:
    try:
        return resolve_export(name, "evaluator", __all__)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
