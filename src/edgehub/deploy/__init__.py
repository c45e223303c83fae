"""Model transformation for deployment (seed 002): patterns over ONNX graphs, grouped into
backends; `transform` (conversions, then fusions), `plan` (inspect and edit before applying),
`quantize` (smooth, calibrate, QDQ) and `apply_backend` (file in, file out, for front ends)."""

from edgehub.deploy.apply import apply_backend
from edgehub.deploy.backend import (
    Backend,
    discover_backends,
    get_backend,
    reset_backends,
    set_backend,
)
from edgehub.deploy.graph import Graph
from edgehub.deploy.model_io import load_model, save_model
from edgehub.deploy.pattern import Match, Pattern, PatternPhaseError, Phase
from edgehub.deploy.planning import Plan, PlanError
from edgehub.deploy.quantize import quantize
from edgehub.deploy.report import PatternStats, TransformReport
from edgehub.deploy.transform import TransformResult, plan, transform

__all__ = [
    "Backend",
    "Graph",
    "Match",
    "Pattern",
    "PatternPhaseError",
    "PatternStats",
    "Phase",
    "Plan",
    "PlanError",
    "TransformReport",
    "TransformResult",
    "apply_backend",
    "discover_backends",
    "get_backend",
    "load_model",
    "plan",
    "quantize",
    "reset_backends",
    "save_model",
    "set_backend",
    "transform",
]
