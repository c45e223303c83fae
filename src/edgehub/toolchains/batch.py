"""Running a model over a whole dataset in one agent call (`BatchRunner`, one per runtime), so a
dataset of many small samples costs one round trip, not one per sample.

Where the agent's runner offers it the samples are placed once, by content
(`~edgehub.runners.protocol.SupportsSharedInput`), and a warm container writes the outputs into
the folder it shares with this host (`~edgehub.runners.protocol.SupportsSharedFolder`).
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from edgehub.errors import InvokeError
from edgehub.runners.protocol import (
    FOUND,
    RESENT,
    UNCHECKED,
    SupportsSharedFolder,
    SupportsSharedInput,
)
from edgehub.toolchains.local_session import device_agent, record_agent_result
from edgehub.toolchains.outputs import number
from edgehub.toolchains.tensors import load_npz

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext
    from edgehub.toolchains.agent_call import AgentCall


_SHARED_NOTES = {
    RESENT: "changed on the device (its sha256 there is not this host's): sent again",
    UNCHECKED: "on the device, but its sha256 could not be taken there (check the device's "
    "Python): sent again",
    FOUND: "already on the device, not sent again (its sha256 there checked)",
}


@dataclass
class BatchOutputs:
    """Each output stacked over the samples (``arrays[name][i]`` is sample ``i``'s), the
    agent's timing metrics, and the .npz they came in."""

    arrays: dict[str, np.ndarray]
    metrics: dict[str, Any]
    path: Path
    data: dict[str, Any]


@dataclass
class BatchJob:
    """One model to run over the samples: a compiled model or a path, the ``role`` its timings
    are logged under (``<role>.<metric>``), and request fields of its run (``options``)."""

    model: Any
    role: str
    options: Mapping[str, Any] = field(default_factory=dict)


class BatchRunner:
    """Runs models over a dataset with the agent of ``device`` (an ``ssh`` device's own, else
    the runtime's container here), inside the context's current run. ``scratch`` keeps a
    second runner's local files apart from the first's in the same run."""

    runtime: ClassVar[str]
    command: ClassVar[str]
    component: ClassVar[type[Any]]
    # its outputs' data carry ``tensors``: the compiler's mapping of the ONNX model's tensors
    # onto the compiled model's (the layer search pairs layers by it, not by name)
    maps_tensors: ClassVar[bool] = False

    def __init__(self, ctx: HubContext, device: str | None, scratch: str | None = None) -> None:
        self.ctx = ctx
        self._agent: AgentCall = device_agent(ctx, self.runtime, device, self.component)
        if scratch is not None:
            self._agent.local_dir = ctx.artifact_dir / scratch

    def model_files(self, model: Any) -> tuple[dict[str, Path], dict[str, Any]]:
        """The files ``model`` (a compiled model, or a path) needs and the run's fields naming
        them (``in/<name>``)."""
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
        """Every sample of ``samples`` through ``model`` (see `run_many`)."""
        job = BatchJob(model, role, options or {})
        return self.run_many([job], samples, stacked=stacked)[0]

    def run_many(
        self, jobs: Sequence[BatchJob], samples: Path, *, stacked: bool, digest: str | None = None
    ) -> list[BatchOutputs]:
        """Every sample of ``samples`` (a directory of .npz, or one stacked .npz) through each
        job's model, in one agent call (the samples travel and load once); the outputs files
        are kept in the run's directory. ``digest``: the samples' content hash, where known."""
        staged = "samples.npz" if stacked else "samples"
        files: dict[str, Path] = {staged: samples}
        where = f"in/{staged}"
        shared = None
        if isinstance(self._agent.runner, SupportsSharedInput):
            from edgehub.tracking.artifacts import hash_path

            known = digest
            shared = self._agent.runner.share_input(samples, lambda: known or hash_path(samples))
        if shared is not None:
            where, done = shared
            files.clear()
            say = self.ctx.events.warning if done in (RESENT, UNCHECKED) else self.ctx.events.info
            say(f"dataset {where}: {_SHARED_NOTES.get(done, 'sent to the device')}")
        runner, box = self._agent.runner, secrets.token_hex(8)
        outbox = runner.outbox(box) if isinstance(runner, SupportsSharedFolder) else None
        runs = []
        for index, job in enumerate(jobs):
            own, fields = self.model_files(job.model)
            if outbox is not None and "extra_outputs" not in job.options:
                assert isinstance(runner, SupportsSharedInput)
                own, fields = _shared(runner, own, fields)
            if any(name in files for name in own):  # two models of one file name
                own, fields = _prefixed(own, fields, f"{index}-")
            files.update(own)
            output = f"{outbox or 'out'}/outputs-{index}.npz"
            runs.append({**fields, **job.options, "output": output})
        request = {"samples": where, "stacked": stacked, "runs": runs}
        try:
            result = self._agent.call(self.command, request, inputs=files, failure=InvokeError)
            if outbox is not None:  # the outputs are in the folder shared with this host
                assert isinstance(runner, SupportsSharedFolder)
                for index in range(len(jobs)):
                    name = f"outputs-{index}.npz"
                    runner.collect(box, name, result.files / name)
        finally:
            if outbox is not None:
                assert isinstance(runner, SupportsSharedFolder)
                runner.discard(box)
        skip = frozenset(result.params) | frozenset(result.metrics)
        record_agent_result(self.ctx, result, skip=skip)  # environment and warnings
        found = []
        for index, job in enumerate(jobs):
            data = dict(result.data["runs"][index])
            metrics = {k: n for k, v in data.items() if (n := number(v)) is not None}
            self.ctx.client.log_metrics({f"{job.role}.{k}": v for k, v in metrics.items()})
            path = result.files / f"outputs-{index}.npz"
            arrays = load_npz(path, mapped=True)  # a copy of this run's own, just made
            found.append(BatchOutputs(arrays, metrics, path, data))
        return found


def _shared(
    runner: SupportsSharedInput, files: dict[str, Path], fields: dict[str, Any]
) -> tuple[dict[str, Path], dict[str, Any]]:
    """The model files placed by content in the folder ``runner`` shares with its container
    (once: a later call finds them there), and the fields naming them there; the files it
    could not place stay with the call. (Not for runs that write a copy beside the model.)"""
    from edgehub.tracking.artifacts import content_hash

    placed: dict[str, str] = {}
    for name, path in files.items():
        if path.is_symlink() or not path.is_file():
            continue
        shared = runner.share_input(path, functools.partial(content_hash, path))
        if shared is not None:
            placed[f"in/{name}"] = shared[0]
    kept = {name: path for name, path in files.items() if f"in/{name}" not in placed}
    moved = {k: placed.get(v, v) if isinstance(v, str) else v for k, v in fields.items()}
    return kept, moved


def _prefixed(
    files: dict[str, Path], fields: dict[str, Any], prefix: str
) -> tuple[dict[str, Path], dict[str, Any]]:
    renamed = {f"{prefix}{name}": path for name, path in files.items()}
    moved = {
        key: f"in/{prefix}{value[3:]}"
        if isinstance(value, str) and value.startswith("in/")
        else value
        for key, value in fields.items()
    }
    return renamed, moved
