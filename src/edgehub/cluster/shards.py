"""`RayShards`: an eval's samples split into shards, each a Ray task, the outputs merged here.

The driver compiles the model (its compile run stays in the driver's store) and opens the EVAL
run; `RayShards.run_models` then cuts the stored dataset into one contiguous shard per worker
slot (a slot: the CPUs of the device's ``[devices.X.docker]`` table, else 1, and one
``docker``), sends each shard with the models' files (named by the driver's runners, so a
runtime's sidecars travel too) and runs `run_shard_task` on the nodes. A task checks its node
(the driver's edgehub version, a Docker daemon, the driver's image of each runtime: else one
line naming the node), runs the models over its samples as a local eval does (the runtime's
batch runner, in a throwaway store) and returns their outputs. The driver stacks them back in
sample order, so every figure is computed from all the samples, as after a local eval; the
timings are summed. Ray runs a shard again elsewhere when its node dies (a shard keeps
nothing); Ctrl-C or a cancelled eval force-cancel the tasks still out and every live node
reaps the containers they left.
"""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray

from edgehub.cluster.address import ClusterAddress
from edgehub.cluster.dispatch import (
    MAX_RETRIES,
    POLL_S,
    RayExecutor,
    check_feasible,
    device_resources,
    first_line,
    hub_toml_text,
    reap_nodes,
)
from edgehub.cluster.worker import image_id, node_name, node_refusal, task_project
from edgehub.errors import EdgehubError, EnvironmentProblem

if TYPE_CHECKING:
    import numpy as np

    from edgehub.config.schema import HubConfig
    from edgehub.core.context import HubContext
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.eval.shards import ModelRun
    from edgehub.toolchains.batch import BatchOutputs
    from edgehub.toolchains.datasets import Dataset


@dataclass(frozen=True)
class ShippedRun:
    """A `ModelRun` as it travels: its runner's recipe, its job's role and options, and its
    model's files (name -> bytes) with the request fields naming them."""

    runtime: str
    device: str | None
    scratch: str | None
    role: str
    options: dict[str, Any]
    files: dict[str, bytes]
    fields: dict[str, Any]


@dataclass(frozen=True)
class ShardJob:
    """One shard: the project's hub.toml, the driver's version and images, and its samples'
    place in the dataset."""

    hub_toml: str
    version: str
    index: int
    start: int
    stop: int
    stacked: bool
    images: dict[str, str | None] = field(default_factory=dict)  # runtime -> driver's image
    image_tags: dict[str, str] = field(default_factory=dict)  # the images hub.toml pins


@dataclass(frozen=True)
class ShardOutcome:
    """Each run's outputs over the shard's samples and its timing metrics, or a refusal."""

    node: str
    outputs: list[dict[str, np.ndarray]] = field(default_factory=list)
    metrics: list[dict[str, float]] = field(default_factory=list)
    refused: str | None = None


class RayShards:
    """Runs an eval's models on the Ray cluster at ``address`` (an
    `edgehub.ops.eval.shards.SampleExecutor`)."""

    def __init__(self, address: ClusterAddress, config: HubConfig) -> None:
        self.cluster = RayExecutor(address)
        self.config = config  # the project's: its devices, and its hub.toml for the nodes

    def connect(self) -> None:
        if not self.cluster.connected:
            self.cluster.connect()

    def close(self) -> None:
        self.cluster.close()

    def run_models(
        self,
        ctx: HubContext,
        dataset: Dataset,
        samples: Path,
        runs: list[ModelRun],
        cancel: Cancellation,
    ) -> list[BatchOutputs]:
        from edgehub import __version__

        self.connect()
        device = runs[0].device or "local"
        asked = device_resources(self.config, device, docker=True)
        check_feasible(asked, f"a shard of this eval on device {device!r}")
        shipped = ray.put([_shipped(ctx, run) for run in runs])
        bounds = _bounds(len(dataset), _slots(asked))
        hub_toml = hub_toml_text(self.config)
        tags = dict(ctx.image_tags)
        images = {r.runtime: image_id(r.runtime, tags) for r in runs}
        task = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)(run_shard_task)
        out: dict[Any, int] = {}
        for index, (start, stop) in enumerate(bounds):
            job = ShardJob(hub_toml, __version__, index, start, stop, dataset.stacked, images, tags)
            part = ray.put(_shard_samples(dataset, samples, start, stop))
            out[task.options(**asked).remote(job, shipped, part)] = index
        ctx.events.info(
            f"{len(dataset)} samples in {len(bounds)} shards on the Ray cluster "
            f"{self.cluster.address.text}"
        )
        try:
            outcomes = _collect(out, cancel)
        except BaseException:
            for ref in out:
                with contextlib.suppress(Exception):  # finished already, or its node gone
                    ray.cancel(ref, force=True)
            raise
        finally:
            reap_nodes()
        return _merged(ctx, runs, outcomes)


def _slots(asked: dict[str, Any]) -> int:
    """How many tasks asking ``asked`` the cluster's resources hold at once (at least 1)."""
    total = ray.cluster_resources()  # type: ignore[no-untyped-call]
    wants = {"CPU": asked["num_cpus"], **asked.get("resources", {})}
    return max(1, min(int(total.get(k, 0) // v) for k, v in wants.items() if v > 0))


def _bounds(count: int, slots: int) -> list[tuple[int, int]]:
    """``count`` samples cut into ``slots`` contiguous shards of near-equal size (none empty)."""
    shards = max(1, min(count, slots))
    size, extra = divmod(count, shards)  # the first ``extra`` shards take one sample more
    starts = [index * size + min(index, extra) for index in range(shards + 1)]
    return list(itertools.pairwise(starts))


def _shipped(ctx: HubContext, run: ModelRun) -> ShippedRun:
    """``run`` with its model's files read, as its runner here names them."""
    files, fields = run.runner.model_files(run.job.model)
    read = {name: path.read_bytes() for name, path in files.items()}
    return ShippedRun(
        run.runtime, run.device, run.scratch, run.job.role, dict(run.job.options), read, fields
    )


def _shard_samples(dataset: Dataset, samples: Path, start: int, stop: int) -> dict[str, bytes]:
    """The files of samples ``start`` to ``stop``: a directory dataset's own (name -> bytes),
    or one stacked .npz of that slice."""
    if not dataset.stacked:
        return {name: (samples / name).read_bytes() for name in dataset.names[start:stop]}
    import numpy as np

    from edgehub.toolchains.tensors import load_npz, save_npz

    arrays = load_npz(samples, mapped=True)
    with tempfile.TemporaryDirectory(prefix="edgehub-shard-") as tmp:
        part = save_npz(
            Path(tmp) / "samples.npz", {k: np.asarray(a[start:stop]) for k, a in arrays.items()}
        )
        return {"samples.npz": part.read_bytes()}


def _collect(out: dict[Any, int], cancel: Cancellation) -> list[ShardOutcome]:
    """The shards' outcomes in shard order, as they finish; a refusal or a lost shard ends the
    eval in one line."""
    found: dict[int, ShardOutcome] = {}
    waiting = list(out)
    while waiting:
        cancel.check()
        done, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=POLL_S)
        for ref in done:
            try:
                outcome: ShardOutcome = ray.get(ref)
            except ray.exceptions.RayTaskError as error:  # the task raised: its error
                cause = error.cause
                if isinstance(cause, EdgehubError):
                    raise cause from None
                raise EnvironmentProblem(
                    f"shard {out[ref] + 1} of the eval failed: {first_line(cause)}"
                ) from None
            except ray.exceptions.RayError as error:  # lost: its retries spent
                raise EnvironmentProblem(
                    f"shard {out[ref] + 1} of the eval was lost on the Ray cluster "
                    f"({first_line(error)}); run it again"
                ) from None
            if outcome.refused is not None:
                raise EnvironmentProblem(outcome.refused)
            found[out[ref]] = outcome
    return [found[index] for index in sorted(found)]


def _merged(
    ctx: HubContext, runs: list[ModelRun], outcomes: list[ShardOutcome]
) -> list[BatchOutputs]:
    """Each run's outputs stacked over the shards in order (kept in the run's directory as
    the .npz a local run writes), its timings summed and logged as ``<role>.<metric>``."""
    import numpy as np

    from edgehub.toolchains.batch import BatchOutputs
    from edgehub.toolchains.tensors import load_npz, save_npz

    nodes = sorted({o.node for o in outcomes})
    ctx.client.log_params({"cluster.shards": len(outcomes), "cluster.nodes": nodes})
    merged = []
    for index, run in enumerate(runs):
        parts = [o.outputs[index] for o in outcomes]
        arrays = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        metrics: dict[str, float] = {}
        for outcome in outcomes:
            for key, value in outcome.metrics[index].items():
                metrics[key] = metrics.get(key, 0.0) + value
        ctx.client.log_metrics({f"{run.job.role}.{k}": v for k, v in metrics.items()})
        path = ctx.artifact_dir / "shards" / f"outputs-{index}.npz"
        save_npz(path, arrays)
        merged.append(BatchOutputs(load_npz(path, mapped=True), metrics, path, {}))
    return merged


# -- on a node ---------------------------------------------------------------------------------


@contextmanager
def _shard_context(job: ShardJob, folder: Path) -> Iterator[HubContext]:
    """A context on a store of the task's own, inside a throwaway run."""
    from edgehub.core import RunType

    project = task_project(folder, job.hub_toml)
    with project.context() as ctx, ctx.open_run(RunType.EVAL, f"shard-{job.index}"):
        yield ctx


def run_shard_task(
    job: ShardJob, runs: list[ShippedRun], samples: dict[str, bytes]
) -> ShardOutcome:
    """Run every model of ``runs`` over the shard's ``samples`` here (a Ray task's body)."""
    import numpy as np

    from edgehub.toolchains.batch import BatchJob
    from edgehub.toolchains.evaluation import batch_runner, runtime_batch_runner

    node = node_name()
    said = f"node {node} refused shard {job.index + 1} of the eval"
    refused = node_refusal(said, job.version, job.images, job.image_tags)
    if refused is not None:
        return ShardOutcome(node, refused=refused)
    with (
        tempfile.TemporaryDirectory(prefix="edgehub-shard-") as tmp,
        _shard_context(job, Path(tmp)) as ctx,
    ):
        folder = Path(tmp)
        where = folder / ("samples.npz" if job.stacked else "samples")
        if not job.stacked:
            where.mkdir()
        for name, data in samples.items():
            (folder / name if job.stacked else where / name).write_bytes(data)
        groups: dict[tuple[str, str | None, str | None], list[int]] = {}
        for index, run in enumerate(runs):
            groups.setdefault((run.runtime, run.device, run.scratch), []).append(index)
        outputs: list[dict[str, np.ndarray]] = [{} for _ in runs]
        metrics: list[dict[str, float]] = [{} for _ in runs]
        for (runtime, device, scratch), indices in groups.items():
            if scratch is None:
                runner = batch_runner(ctx, runtime, device)
            else:
                runner = runtime_batch_runner(ctx, runtime, device, scratch)
            jobs = [BatchJob(_placed(folder, index, runs[index]), runs[index].role,
                             runs[index].options) for index in indices]  # fmt: skip
            runner.model_files = _Placed.files  # type: ignore[method-assign]
            found = runner.run_many(jobs, where, stacked=job.stacked)
            for index, out in zip(indices, found, strict=True):
                outputs[index] = {name: np.array(a) for name, a in out.arrays.items()}
                metrics[index] = dict(out.metrics)
    return ShardOutcome(node, outputs, metrics)


@dataclass(frozen=True)
class _Placed:
    """A shipped model's files written on this node, and the request fields naming them."""

    paths: dict[str, Path]
    fields: dict[str, Any]

    @staticmethod
    def files(model: Any) -> tuple[dict[str, Path], dict[str, Any]]:
        """A runner's ``model_files`` for a placed model: the files as the driver named them."""
        assert isinstance(model, _Placed)
        return dict(model.paths), dict(model.fields)


def _placed(folder: Path, index: int, run: ShippedRun) -> _Placed:
    own = folder / "models" / str(index)
    own.mkdir(parents=True)
    for name, data in run.files.items():
        (own / name).write_bytes(data)
    return _Placed({name: own / name for name in run.files}, run.fields)
