"""Running a model over a whole dataset in ONNX Runtime, one agent call per model.

Used by evaluation (`edgehub.ops.eval`): the samples travel once per call and every sample
runs in the same session, so a dataset of many small samples costs one round trip, not one
per sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InvokeError
from edgehub.toolchains.local_session import record_agent_result
from edgehub.toolchains.onnxruntime.components import ONNXRuntimeInvoker
from edgehub.toolchains.remote.select import device_agent
from edgehub.toolchains.tensors import load_npz

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext
    from edgehub.toolchains.agent_call import AgentCall

__all__ = ["BatchOutputs", "BatchRunner"]

RUNTIME = "onnxruntime"


@dataclass
class BatchOutputs:
    """Each output stacked over the samples (``arrays[name][i]`` is sample ``i``'s), the
    agent's timing metrics, and the .npz they came in."""

    arrays: dict[str, np.ndarray]
    metrics: dict[str, Any]
    path: Path


class BatchRunner:
    """Runs models over a dataset with the agent of ``device`` (an ``ssh`` device's own, else
    the ONNX Runtime container here), inside the context's current run."""

    def __init__(self, ctx: HubContext, device: str | None, scratch: str | None = None) -> None:
        self.ctx = ctx
        self._agent: AgentCall = device_agent(ctx, RUNTIME, device, ONNXRuntimeInvoker)
        if scratch is not None:  # a second agent in one run keeps its files apart
            self._agent.local_dir = ctx.artifact_dir / scratch

    def run(self, model: Path, samples: Path, *, stacked: bool, role: str) -> BatchOutputs:
        """Every sample of ``samples`` (a directory of .npz, or one stacked .npz) through
        ``model``; the outputs file is kept in the run's directory and the timings are logged
        as ``<role>.<metric>``."""
        staged = "samples.npz" if stacked else "samples"
        request = {
            "model": f"in/{model.name}",
            "samples": f"in/{staged}",
            "stacked": stacked,
            "output": "out/outputs.npz",
        }
        files = {model.name: model, staged: samples}
        result = self._agent.call("ort.batch", request, inputs=files, failure=InvokeError)
        skip = frozenset(result.params) | frozenset(result.metrics)
        record_agent_result(self.ctx, result, skip=skip)  # environment and warnings
        self.ctx.client.log_metrics(
            {f"{role}.{k}": float(v) for k, v in result.metrics.items() if _is_number(v)}
        )
        path = result.files / "outputs.npz"
        return BatchOutputs(load_npz(path), dict(result.metrics), path)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
