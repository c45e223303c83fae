"""What was recorded of an engine's build (TensorRT flavor, version and targets), so the agent
can refuse an engine before loading it where its TensorRT or GPU differs: the ``ENGINE.json``
sidecar the build writes beside the file, else the newest finished compile in the store whose
engine has the file's content. An engine with neither is run unchecked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.agent.trt.engine_file import engine_problem, engine_record
from edgehub.errors import UsageError
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.toolchains.tensorrt.components import TensorRTCompiledModel


_SIDECAR_MAX = 64 * 1024


def _sidecar(path: Path) -> dict[str, Any] | None:
    beside = path.with_name(path.name + ".json")
    try:
        if not beside.is_file() or beside.stat().st_size > _SIDECAR_MAX:
            return None
        data = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "tensorrt_version" not in data:
        return None
    return {k: data.get(k) for k in ("tensorrt_flavor", "tensorrt_version", "targets")}


def recorded_engine(ctx: HubContext, path: Path) -> dict[str, Any] | None:
    """The build record of the engine ``path``; None where nothing was recorded."""
    from edgehub.tracking.artifacts import hash_path

    found = _sidecar(path)
    if found is not None:
        return found
    rows = ctx.store.rows(
        "SELECT a.run_id FROM artifacts a JOIN runs r ON r.id = a.run_id WHERE a.sha256 = ?"
        " AND a.name = 'path' AND r.type = 'COMPILE' AND r.status = 'FINISHED'"
        " ORDER BY r.started_at DESC LIMIT 1",
        (hash_path(path),),
    )
    if not rows:
        return None
    params = ctx.store.get_run(str(rows[0]["run_id"])).params
    flavor, version = params.get("tensorrt_flavor"), params.get("tensorrt_version")
    if not isinstance(flavor, str) or not isinstance(version, str):
        return None
    targets = str(params.get("target") or "").split(",")
    return engine_record(flavor, version, [t for t in targets if t])


def engine_file(ctx: HubContext, model: TensorRTCompiledModel) -> Path:
    """The engine file ``model`` names, here; a file that is no engine is the user's to fix."""
    path = regular_file(model.path.to_local(ctx).local(), "model")
    problem = engine_problem(path.name)
    if problem is not None:
        raise UsageError(problem)
    return path
