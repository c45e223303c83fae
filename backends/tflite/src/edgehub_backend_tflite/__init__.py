"""The ``tflite`` deployment backend: conversions that make ONNX graphs onnx2tf can convert.

Registered through the ``edgehub.backends`` entry point as `BACKEND` (conversions only so far).
"""

from __future__ import annotations

from edgehub.deploy.backend import Backend
from edgehub_backend_tflite.conversions import InferConvKernelShape, SanitizeNodeNames

CONVERSION_PATTERNS = (InferConvKernelShape, SanitizeNodeNames)

BACKEND = Backend("tflite", conversion_patterns=CONVERSION_PATTERNS)

__all__ = ["BACKEND", "CONVERSION_PATTERNS", "InferConvKernelShape", "SanitizeNodeNames"]
