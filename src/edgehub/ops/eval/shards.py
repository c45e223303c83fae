"""The seam of an eval whose samples run elsewhere: a `SampleExecutor` runs the models over
shards of the dataset (`edgehub.cluster.shards`: a Ray task per shard) and gives back each
model's outputs stacked over all the samples, in their order, so that every figure is computed
from the merged samples on this host exactly as after a local run (`measure`).

Such an eval runs in containers on the nodes: a device of the ``local`` provider, a runtime
that is not this host's GPU, and no layer search or repair (they rerun the models on this
host); `check_shardable` refuses the rest in one line before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor as Runtime
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.eval.run import EvalRequest
    from edgehub.toolchains.batch import BatchJob, BatchOutputs, BatchRunner
    from edgehub.toolchains.datasets import Dataset


@dataclass(frozen=True)
class ModelRun:
    """One model over the samples: its job, the runner that would run it here (it names the
    job's files), and what a node builds that runner from: ``runtime``, ``device`` and
    ``scratch`` (see `edgehub.toolchains.evaluation.runtime_batch_runner`). Runs of one
    (runtime, device, scratch) go in one call, as here."""

    job: BatchJob
    runner: BatchRunner
    runtime: str
    device: str | None = None
    scratch: str | None = None


class SampleExecutor(Protocol):
    """Runs an eval's models over shards of its samples (see the module docstring)."""

    def connect(self) -> None:
        """Reach the workers (before the compile); exit 3 in one line where they are not."""

    def run_models(
        self,
        ctx: HubContext,
        dataset: Dataset,
        samples: Path,
        runs: list[ModelRun],
        cancel: Cancellation,
    ) -> list[BatchOutputs]:
        """Each run's outputs over every sample of ``samples`` (the stored dataset), in
        order, its timings summed over the shards and logged as a local run logs them."""
        ...


def check_shardable(
    request: EvalRequest, runtime: Runtime, in_container: bool, provider: str
) -> None:
    """A `UsageError` (exit 2) in one line for an eval that cannot be split across workers."""
    if request.layers is not None or request.fix is not None:
        flag = "--layers" if request.layers is not None else "--fix"
        raise UsageError(
            f"{flag} reruns the models on this host's first samples and is not split across "
            f"a cluster; drop --cluster for it (or drop {flag})"
        )
    if runtime.host_gpu:
        raise UsageError(
            f"{request.runtime} evals run on this host's GPU, not on cluster workers; drop "
            "--cluster"
        )
    if not in_container:
        raise UsageError(
            f"--cluster splits an eval across the containers of a local device; device "
            f"{request.device!r} uses {provider!r}: drop --cluster or pick a local device"
        )
