"""The ``tensorrt`` deployment backend: ONNX graph patterns that make models TensorRT-friendly.

Registered through the ``edgehub.backends`` entry point as `BACKEND`. Lists are ordered most
specific first (the planner gives overlapping nodes to the earlier pattern).
"""

from __future__ import annotations

from edgehub.deploy.backend import Backend
from edgehub_backend_tensorrt.conversions import (
    QLinearConvToQDQ,
    QLinearMatMulToQDQ,
    RemoveIdentity,
)
from edgehub_backend_tensorrt.fusions_conv import (
    FoldBatchNormAffine,
    FoldConvAffine,
    FuseConvActivation,
    FuseGemmActivation,
)
from edgehub_backend_tensorrt.fusions_transformer import (
    FuseGeluErf,
    FuseGeluTanh,
    FuseLayerNorm,
    FuseMatMulAdd,
)
from edgehub_backend_tensorrt.quantized import QuantizeConv, QuantizeGemm, QuantizeMatMul
from edgehub_backend_tensorrt.smooth import SmoothQuantLayerNorm

CONVERSION_PATTERNS = (RemoveIdentity, QLinearConvToQDQ, QLinearMatMulToQDQ)
FUSION_PATTERNS = (
    FuseLayerNorm,
    FuseGeluErf,
    FuseGeluTanh,
    FuseConvActivation,
    FoldConvAffine,
    FoldBatchNormAffine,
    FuseGemmActivation,
    FuseMatMulAdd,
)
SMOOTH_PATTERNS = (SmoothQuantLayerNorm,)
QUANTIZED_PATTERNS = (QuantizeConv, QuantizeGemm, QuantizeMatMul)

BACKEND = Backend(
    "tensorrt",
    conversion_patterns=CONVERSION_PATTERNS,
    fusion_patterns=FUSION_PATTERNS,
    smooth_patterns=SMOOTH_PATTERNS,
    quantized_patterns=QUANTIZED_PATTERNS,
)

__all__ = [
    "BACKEND",
    "CONVERSION_PATTERNS",
    "FUSION_PATTERNS",
    "QUANTIZED_PATTERNS",
    "SMOOTH_PATTERNS",
    "FoldBatchNormAffine",
    "FoldConvAffine",
    "FuseConvActivation",
    "FuseGeluErf",
    "FuseGeluTanh",
    "FuseGemmActivation",
    "FuseLayerNorm",
    "FuseMatMulAdd",
    "QLinearConvToQDQ",
    "QLinearMatMulToQDQ",
    "QuantizeConv",
    "QuantizeGemm",
    "QuantizeMatMul",
    "RemoveIdentity",
    "SmoothQuantLayerNorm",
]
