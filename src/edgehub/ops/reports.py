"""What a run produced, as the front ends show it: `RunReport` and `PipelineReport`."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from edgehub.core.component.outputs import ComponentOutput
    from edgehub.core.context import HubContext
    from edgehub.toolchains.accuracy import OutputAccuracy


LATENCY_KEYS = ("mean", "median", "min", "max", "p90", "p95", "p99", "std")
MAX_JSON_BYTES = 256 << 20


def read_json(path: Path) -> Any:
    """The JSON in a stored file; None when unreadable, not a regular file (a FIFO is not
    waited on) or larger than `MAX_JSON_BYTES` (refused before any of it is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_JSON_BYTES:
            return None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as stream:
            return json.loads(stream.read(MAX_JSON_BYTES + 1))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def log_json(
    ctx: HubContext, file_name: str, data: Any, *, name: str, indent: int | None = None
) -> None:
    """Write ``data`` as ``file_name`` in the run's artifact folder and log it as ``name``."""
    path = ctx.artifact_dir / file_name
    path.write_text(json.dumps(data, indent=indent), encoding="utf-8")
    ctx.client.log_artifact(path, name=name)


@dataclass
class RunReport:
    """One run's result: ids, status, metrics, params, artifacts and environment."""

    run_id: str
    name: str
    type: str
    status: str
    device: str | None
    metrics: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] | None = None
    shapes: dict[str, Any] | None = None

    @property
    def latency_ms(self) -> dict[str, Any] | None:
        """Latency statistics in ms, for profile runs."""
        if not any(f"latency_{k}_ms" in self.metrics for k in LATENCY_KEYS):
            return None
        return {k: self.metrics.get(f"latency_{k}_ms") for k in LATENCY_KEYS}

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        shapes, outputs = data.pop("shapes"), data.pop("outputs")
        extra = {"latency_ms": self.latency_ms, "shapes": shapes, "outputs": outputs}
        return data | {key: value for key, value in extra.items() if value is not None}


@dataclass
class PipelineReport:
    """compile → profile → invoke → reference, and the compiled model's accuracy (on one
    sample; with a dataset, over it too: ``eval``).

    ``stopped_after_compile`` says why only the compile step ran (e.g. no GPU can run a
    TensorRT engine here): the report then holds the compile run (its build report) alone.
    """

    compile: RunReport
    profile: RunReport | None = None
    invoke: RunReport | None = None
    reference: RunReport | None = None
    accuracy: list[OutputAccuracy] = field(default_factory=list)
    stopped_after_compile: str | None = None
    reference_note: str | None = None
    """Why there is no accuracy: the reference was skipped, or no output names match."""
    eval: RunReport | None = None
    """The EVAL run on the request's dataset (figures per output, task metrics), if any."""

    def steps(self) -> dict[str, RunReport]:
        keys = ("compile", "profile", "invoke", "reference", "eval")
        return {key: getattr(self, key) for key in keys if getattr(self, key) is not None}

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {key: report.to_dict() for key, report in self.steps().items()}
        data["accuracy"] = [row.to_dict() for row in self.accuracy]
        if self.stopped_after_compile:
            data["stopped_after_compile"] = self.stopped_after_compile
        if self.reference_note:
            data["reference_note"] = self.reference_note
        return data


def _shapes(params: dict[str, Any]) -> dict[str, Any] | None:
    """The input shapes a run recorded (``shapes`` or ``input_shapes`` params)."""
    for key in ("shapes", "input_shapes"):
        if key in params:
            return params[key] if isinstance(params[key], dict) else {"inputs": params[key]}
    return None


def summarize(output: ComponentOutput) -> RunReport:
    """The report of the run that produced ``output``."""
    log = output.run_log
    if log is None:
        raise RuntimeError("this output was not produced by a run")
    params = {k.lstrip("$"): p.value for k, p in log.params.items() if not k.startswith("option.")}
    outputs = getattr(output, "output", None)
    return RunReport(
        run_id=log.run_id,
        name=log.name,
        type=str(log.run_type),
        status=log.status if log.status != "RUNNING" else "FINISHED",
        device=params.get("device"),
        metrics={k.lstrip("$"): m.value for k, m in log.metrics.items()},
        params=params,
        artifacts={
            (a.name or a.file_name).lstrip("$"): str(a.file_path) for a in log.artifacts.values()
        },
        environment=dict(log.environment),
        outputs=_output_signature(outputs),
        shapes=_shapes(params),
    )


def _output_signature(outputs: Any) -> dict[str, dict[str, Any]] | None:
    """Each output's dtype and shape (read from the file's headers where the invoker left
    its outputs unread: no numpy for a report)."""
    if not isinstance(outputs, dict):
        return None
    signature = getattr(outputs, "signature", None)
    if callable(signature):
        return {n: {"dtype": d, "shape": list(s)} for n, (d, s) in signature().items()}
    return {n: {"dtype": str(a.dtype), "shape": list(a.shape)} for n, a in outputs.items()}
