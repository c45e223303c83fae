"""Evaluators of the registered runtimes: a compiled model's accuracy on a dataset.

The names resolve on first use through the runtime registry (`edgehub.core.runtimes`), so
core imports no toolchain.
"""

from edgehub.core.runtimes import lazy_exports
from edgehub.errors import InputDataError

__all__ = [
    "EvaluationResult",
    "InputDataError",
    "ONNXRuntimeEvaluator",
    "TFLiteEvaluator",
    "TensorRTEvaluator",
]


__getattr__, __dir__ = lazy_exports(__name__, "evaluator", __all__)
