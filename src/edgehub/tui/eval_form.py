"""The Run screen's ``eval`` step: its form's fields (those of ``hub exec eval``) and the
`EvalRequest` made of what was filled in. The compile options come from the runtime's
compiler, as for the other steps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.tui.config_fields import FieldSpec

if TYPE_CHECKING:
    from edgehub.ops.eval import EvalRequest


EVAL_STEP = "eval"
EVAL_FIELDS = [
    FieldSpec("dataset", "text", required=True),  # a directory of .npz or one .npz
    FieldSpec("labels", "text"),
    FieldSpec("metrics", "list", default=("top1",)),
    FieldSpec("goals", "list", default=("cosine>=0.999",)),
    FieldSpec("reference", "text", default="onnxruntime"),
    FieldSpec("layers", "float", default=0.2),
    FieldSpec("layer_samples", "int", default=4),
    FieldSpec("worst", "int", default=5),
]
_PATHS = ("dataset", "labels")


def eval_request(
    *,
    runtime: str,
    model: Path,
    device: str | None,
    root: Path,
    values: dict[str, Any],
    compile_options: dict[str, Any],
) -> EvalRequest:
    """The request of an eval form's ``values`` (paths relative to the project's ``root``).
    A defaulted field's placeholder is only a hint: metrics, goals and the layer search are
    asked for only when typed in."""
    from edgehub.ops.eval import EvalRequest

    paths = {key: _path(root, values[key]) for key in _PATHS if key in values}
    return EvalRequest(
        runtime=runtime,
        model=model,
        dataset=paths["dataset"],
        labels=paths.get("labels"),
        metrics=[str(m) for m in values.get("metrics", [])],
        goals=[str(g) for g in values.get("goals", [])],
        device=device,
        options=compile_options,
        reference=values.get("reference"),
        layers=values.get("layers"),
        layer_samples=values.get("layer_samples", 4),
        worst=values.get("worst", 5),
    )


def missing_paths(root: Path, values: dict[str, Any]) -> dict[str, str]:
    """The dataset or labels fields naming nothing on disk, each with what to give instead."""
    wanted = {
        "dataset": "a directory of .npz samples or one .npz",
        "labels": "an .npz or .json of per-sample targets",
    }
    return {
        key: f"{values[key]} not found; give {what}"
        for key, what in wanted.items()
        if key in values and not _path(root, values[key]).exists()
    }


def _path(root: Path, text: str) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else root / path
