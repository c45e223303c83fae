"""Running a model over a whole dataset in one agent call (`BatchRunner`, one per runtime).

Used by evaluation (`edgehub.ops.eval`): the samples travel once per call and every sample
runs in the same session, so a dataset of many small samples costs one round trip, not one
per sample. Each runtime's subclass names its agent command and the files its model needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from edgehub.errors import InvokeError
from edgehub.toolchains.local_session import record_agent_result
from edgehub.toolchains.remote.select import device_agent
from edgehub.toolchains.tensors import load_npz

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext
    from edgehub.toolchains.agent_call import AgentCall

__all__ = ["BatchOutputs", "BatchRunner"]


@dataclass
class BatchOutputs:
    """Each output stacked over the samples (``arrays[name][i]`` is sample ``i``'s), the
    agent's timing metrics, and the .npz they came in."""

    arrays: dict[str, np.ndarray]
    metrics: dict[str, Any]
    path: Path
    data: dict[str, Any]


class BatchRunner:
    """Runs models over a dataset with the agent of ``device`` (an ``ssh`` device's own, else
    the runtime's container here), inside the context's current run. ``scratch`` keeps a
    second runner's local files apart from the first's in the same run."""

    runtime: ClassVar[str]
    command: ClassVar[str]
    component: ClassVar[type[Any]]

    def __init__(self, ctx: HubContext, device: str | None, scratch: str | None = None) -> None:
        self.ctx = ctx
        self._agent: AgentCall = device_agent(ctx, self.runtime, device, self.component)
        if scratch is not None:
            self._agent.local_dir = ctx.artifact_dir / scratch

    def model_files(self, model: Any) -> tuple[dict[str, Path], dict[str, Any]]:
        """The files ``model`` (a compiled model, or a path) needs and the request fields
        naming them."""
        path = model if isinstance(model, Path) else Path(model.path.to_local(self.ctx).local())
        return {path.name: path}, {"model": f"in/{path.name}"}

    def run(
        self,
        model: Any,
        samples: Path,
        *,
        stacked: bool,
        role: str,
        options: Mapping[str, Any] | None = None,
    ) -> BatchOutputs:
        """Every sample of ``samples`` (a directory of .npz, or one stacked .npz) through
        ``model``; the outputs file is kept in the run's directory and the timings are logged
        as ``<role>.<metric>``. ``options`` adds request fields the command takes."""
        files, request = self.model_files(model)
        request.update(options or {})
        staged = "samples.npz" if stacked else "samples"
        files[staged] = samples
        request.update({"samples": f"in/{staged}", "stacked": stacked, "output": "out/outputs.npz"})
        result = self._agent.call(self.command, request, inputs=files, failure=InvokeError)
        skip = frozenset(result.params) | frozenset(result.metrics)
        record_agent_result(self.ctx, result, skip=skip)  # environment and warnings
        self.ctx.client.log_metrics(
            {f"{role}.{k}": float(v) for k, v in result.metrics.items() if _is_number(v)}
        )
        path = result.files / "outputs.npz"
        return BatchOutputs(load_npz(path), dict(result.metrics), path, dict(result.data))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
