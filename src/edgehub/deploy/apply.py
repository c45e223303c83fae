"""One call for front ends: transform a model file with a backend's patterns and save it."""

from __future__ import annotations

from pathlib import Path

from edgehub.deploy.backend import find_backend, get_backend
from edgehub.deploy.model_io import save_model
from edgehub.deploy.report import TransformReport
from edgehub.deploy.transform import transform


def apply_backend(
    model_path: str | Path, backend_name: str | None, out_path: str | Path
) -> TransformReport:
    """Transform ``model_path`` with the conversion and fusion patterns of ``backend_name``
    (None: the active or only installed backend), write the result to ``out_path``, and
    return the report (``report.backend`` names the backend used)."""
    backend = find_backend(backend_name) if backend_name else get_backend()
    result = transform(model_path, [*backend.conversion_patterns, *backend.fusion_patterns])
    save_model(result.model, out_path)
    result.report.backend = backend.name
    return result.report
