"""`hub runs rerun SWEEP_RUN`: a sweep made again as a whole from its record.

The sweep run recorded its grid (step, models, devices, runtimes, the varied and fixed options);
its cells' component runs stored each model and the inputs they ran on by content. The rerun
builds the same grid on those stored copies (never the paths the first sweep was given), on the
recorded images (``image="current"``: today's) and devices (``device``: all cells on that one
instead), runs it through `run_sweep` (compiles build again, as a single rerun's do), tags the
new sweep ``rerun_of`` with the original's id, and reports each cell's headline figures beside
the original's, matched by cell label.
"""

from __future__ import annotations

import json
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.project import Project, Subscriber
    from edgehub.ops.sweep import SweepReport
    from edgehub.ops.sweep_grid import SweepGrid
    from edgehub.tracking.records import RunRecord
    from edgehub.tracking.store import RunStore


_MODEL_STEP = {"pipeline": "COMPILE", "profile": "PROFILE"}  # the run whose input is the model


@dataclass
class SweepRerun:
    """The original sweep, its rerun, where it ran, and each cell's figures beside the first's."""

    original: RunRecord
    sweep: SweepReport
    image: str
    summary: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "original": self.original.run_id,
            "sweep": self.sweep.to_dict(),
            "image": self.image,
            "summary": list(self.summary),
        }


def _json(record: RunRecord, name: str) -> Any:
    value = record.params.get(name)
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None


def _step_runs(store: RunStore, cell: RunRecord) -> list[RunRecord]:
    rows = store.rows(
        "SELECT run_id FROM tags WHERE name = 'sweep.cell' AND value = ?", (cell.run_id,)
    )
    return [store.get_run(str(row["run_id"])) for row in rows]


def _stored(record: RunRecord, name: str) -> Path | None:
    from edgehub.tracking.artifacts import hash_path

    artifact = record.artifacts.get(name)
    if artifact is None or not artifact.is_stored or not artifact.sha256:
        return None
    path = Path(artifact.file_path)
    return path if path.is_file() and hash_path(path) == artifact.sha256 else None


def _grid(
    store: RunStore, original: RunRecord, device: str | None, image: str
) -> tuple[SweepGrid, dict[str, str], str]:
    """The original's grid on the stored models and inputs; the image tags and where."""
    from edgehub.ops.recorded_image import recorded_image
    from edgehub.ops.sweep import CELL_RUN
    from edgehub.ops.sweep_grid import SweepGrid

    what = f"sweep {original.run_id[:8]}"
    step = original.params.get("step")
    if original.status == "RUNNING":
        raise UsageError(f"{what} is still running; rerun it once it has ended")
    if step not in _MODEL_STEP:
        raise UsageError(f"{what} recorded no sweep step; it cannot be re-created")
    models: dict[str, Path] = {}
    inputs: dict[str, Path] = {}
    tags: dict[str, str] = {}
    where: set[str] = set()
    for cell in store.list_runs(parent_run_id=original.run_id, limit=None):
        if cell.run_type != CELL_RUN:
            continue
        model = str(cell.params.get("model"))
        for run in _step_runs(store, cell):
            if run.run_type == _MODEL_STEP[step] and model not in models:
                stored = _stored(run, "input")
                if stored is not None:
                    models[model] = stored
            data = _stored(run, "input_data")
            if data is not None and (model not in inputs or run.run_type == "INFERENCE"):
                inputs[model] = data
            override, said = recorded_image(run, image)  # a gone image: refused up front
            tags.update(override)
            where.add(said)
    recorded = [str(m) for m in _json(original, "models") or []]
    missing = [m for m in recorded if m not in models]
    if not recorded or missing:
        name = Path(missing[0]).name if missing else "any model"
        raise UsageError(
            f"{what} has no stored copy of {name} (no cell of it finished its first step); "
            "it cannot be re-created"
        )
    settings = _json(original, "model_settings") or {}
    grid = SweepGrid(
        models=[models[m] for m in recorded],
        devices=[device] if device else list(_json(original, "devices") or ["local"]),
        runtimes=list(_json(original, "runtimes") or []),
        vary=dict(_json(original, "vary") or {}),
        step=str(step),
        settings=dict(_json(original, "set") or {}),
        model_settings={models[m]: dict(v) for m, v in settings.items() if m in models},
        model_inputs={models[m]: path for m, path in inputs.items() if m in models},
    )
    return grid, tags, "; ".join(sorted(where)) or "on the device's own toolchain"


def _figures(cell: dict[str, Any]) -> str:
    if cell.get("status") != "FINISHED":
        return str(cell.get("status"))
    median = cell.get("median_ms")
    return f"median {median:.3f} ms" if isinstance(median, (int, float)) else "FINISHED"


def rerun_sweep(
    project: Project,
    original: RunRecord,
    *,
    device: str | None = None,
    image: str = "recorded",
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
) -> SweepRerun:
    """Run the sweep ``original`` again as a whole (see the module)."""
    from edgehub.ops.rerun import RERUN_TAG
    from edgehub.ops.sweep import run_sweep

    with closing(project.store()) as store:
        grid, tags, where = _grid(store, original, device, image)
        first = {}
        for cell in store.list_runs(parent_run_id=original.run_id, limit=None):
            recorded = _json(cell, "cell")
            if isinstance(recorded, dict):
                first[str(recorded.get("label"))] = recorded
    report = run_sweep(
        project, grid, subscriber=subscriber, cancel=cancel,
        tags={RERUN_TAG: original.run_id}, image_tags=tags, no_cache=True,
    )  # fmt: skip
    result = SweepRerun(original, report, where)
    for done in report.cells:
        before = first.get(done.label)
        was = _figures(before) if before is not None else "not in the original"
        result.summary.append(f"{done.label}: {was} -> {_figures(done.to_dict())}")
    return result
