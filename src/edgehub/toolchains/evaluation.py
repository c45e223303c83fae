"""What every evaluation (``hub exec eval`` and the `Evaluator` components) shares: the runner
of a compiled model on its device, the pairing of its outputs with the reference's, their scores.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InvalidMeasurementError, UsageError
from edgehub.toolchains.metrics import output_figures, score, summarize_figures, task_metric

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext
    from edgehub.toolchains.batch import BatchJob, BatchOutputs, BatchRunner
    from edgehub.toolchains.datasets import Dataset


Pairs = list[tuple[str, "np.ndarray", "np.ndarray"]]


@dataclass
class Scores:
    """``outputs``: output -> figure -> value over the samples; ``worst``: output -> the
    samples of lowest cosine; ``tasks``: metric -> {"model", "reference", "output",
    "against"}; ``per_sample``: every per-sample value, by output (figures) and by metric."""

    outputs: dict[str, dict[str, float]] = field(default_factory=dict)
    worst: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    per_sample: dict[str, Any] = field(default_factory=dict)


def model_signature(ctx: HubContext, model: Path) -> dict[str, Any]:
    """The ONNX model's inputs and outputs as the reference runtime reads them (its
    ``inspect``, in its container), kept by content hash under the store's
    ``cache/signatures`` so that a later eval of the same model asks no container."""
    from edgehub.core.runtimes import reference_runtime
    from edgehub.tracking.artifacts import content_hash

    cache = ctx.project_dir / "cache" / "signatures" / f"{content_hash(model)}.json"
    with contextlib.suppress(OSError, ValueError):
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if isinstance(kept, dict) and isinstance(kept.get("inputs"), list):
            return kept
    inspect = reference_runtime().inspect
    assert inspect is not None  # the reference runtime reads any ONNX model's signature
    signature = inspect(ctx, model, None)
    with contextlib.suppress(OSError):  # a store that cannot keep it asks again next time
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f".{cache.name}.{os.getpid()}")
        partial.write_text(json.dumps(signature), encoding="utf-8")
        os.replace(partial, cache)
    return signature


def batch_runner(ctx: HubContext, runtime: str, device: str | None) -> BatchRunner:
    """The runner of a ``runtime`` model on ``device``: the one its provider declares
    (`ProviderConfig.batch_runner`: AI Hub's), else the runtime's (its descriptor's
    ``batch_runner``: the agent of an ``ssh`` device, the runtime's container here, or this
    host's GPU for a ``host_gpu`` runtime)."""
    declared = ctx.device(device or "local").provider_declaration
    if declared is not None and declared.batch_runner is not None:
        from edgehub.toolchains.deferred import deferred

        runner: BatchRunner = deferred(declared.batch_runner)(ctx, device, runtime=runtime)
        return runner
    return runtime_batch_runner(ctx, runtime, device)


def runtime_batch_runner(
    ctx: HubContext, runtime: str, device: str | None, scratch: str | None = None
) -> BatchRunner:
    """The runner its descriptor declares of a ``runtime`` model on ``device`` (``scratch``:
    see `BatchRunner`); a usage error where it declares none."""
    from edgehub.core.runtimes import get_runtime

    make = get_runtime(runtime).batch_runner
    if make is None:
        raise UsageError(f"runtime {runtime!r} runs no dataset (it declares no batch runner)")
    found: BatchRunner = make(ctx, device) if scratch is None else make(ctx, device, scratch)
    return found


def run_both(
    runners: tuple[BatchRunner, BatchRunner],
    jobs: tuple[BatchJob, BatchJob],
    samples: Path,
    stacked: bool,
    digest: str | None = None,
) -> tuple[BatchOutputs, BatchOutputs]:
    """The compiled model's and the reference's outputs: in one call where one runner serves
    both, else one call each (``digest``: the samples' content hash, where known)."""
    if runners[0] is runners[1]:
        model, reference = runners[0].run_many(jobs, samples, stacked=stacked, digest=digest)
        return model, reference
    (model,) = runners[0].run_many(jobs[:1], samples, stacked=stacked, digest=digest)
    (reference,) = runners[1].run_many(jobs[1:], samples, stacked=stacked, digest=digest)
    return model, reference


def pair_outputs(
    ctx: HubContext, model: dict[str, np.ndarray], reference: dict[str, np.ndarray]
) -> Pairs:
    """(reference output name, model's, reference's) by name, else by position."""
    if set(reference) <= set(model):
        return [(n, model[n], reference[n]) for n in reference]
    if len(model) == len(reference):
        ctx.events.warning(
            f"the compiled model's outputs ({', '.join(model)}) differ in name from the "
            f"reference's ({', '.join(reference)}): compared in order"
        )
        return [(n, m, r) for (n, r), m in zip(reference.items(), model.values(), strict=True)]
    raise UsageError(
        f"the compiled model has outputs {', '.join(model)} but the reference has "
        f"{', '.join(reference)}; they cannot be paired"
    )


def score_outputs(pairs: Pairs, dataset: Dataset, metric_names: list[str], worst: int) -> Scores:
    """Every output's figures and the task metrics (on the first output) over ``dataset``."""
    scores = Scores()
    figures_by_output: dict[str, dict[str, list[float]]] = {}
    for name, model, reference in pairs:
        if model.shape != reference.shape:
            raise UsageError(
                f"output {name!r} has shape {list(model.shape[1:])} in the compiled model but "
                f"{list(reference.shape[1:])} in the reference; they cannot be compared"
            )
        _check_finite(name, model, "compiled model", dataset)
        _check_finite(name, reference, "reference", dataset)
        per_sample = output_figures(model, reference)
        figures_by_output[name] = per_sample
        scores.outputs[name] = summarize_figures(per_sample)
        order = sorted(range(len(dataset)), key=lambda i: per_sample["cosine"][i])[:worst]
        scores.worst[name] = [
            {
                "sample": dataset.names[i],
                "cosine": per_sample["cosine"][i],
                "max_abs": per_sample["max_abs"][i],
            }
            for i in order
        ]
    tasks: dict[str, dict[str, list[float]]] = {}
    primary, model, reference = pairs[0]
    for metric in metric_names:
        values, ref_values = score(metric, task_metric(metric), model, reference, dataset.labels)
        tasks[metric] = {"model": values, "reference": ref_values}
        scores.tasks[metric] = {
            "model": sum(values) / len(values),
            "reference": sum(ref_values) / len(ref_values),
            "output": primary,
            "against": "labels" if dataset.labels is not None else "reference",
        }
        for side in ("model", "reference"):
            if not math.isfinite(scores.tasks[metric][side]):
                raise InvalidMeasurementError(
                    f"task metric {metric!r} of the {side} came out "
                    f"{scores.tasks[metric][side]} over the samples; a result that is not a "
                    "number cannot be recorded or judged: check the metric and the labels"
                )
    scores.per_sample = {"outputs": figures_by_output, "tasks": tasks}
    return scores


def check_figures(figures: dict[str, float]) -> dict[str, float]:
    """``figures`` to record, each a finite number, else `InvalidMeasurementError` naming
    the first that is not (a store keeps no NaN, and a verdict cannot use one)."""
    for name, value in figures.items():
        if not math.isfinite(value):
            raise InvalidMeasurementError(
                f"the eval's {name} came out {value}; a result that is not a finite number "
                "cannot be recorded or judged: check the model and the samples"
            )
    return figures


def _check_finite(name: str, outputs: np.ndarray, which: str, dataset: Dataset) -> None:
    """Refuse (`InvalidMeasurementError`) outputs of ``which`` model holding NaN or
    infinity: every figure of them would be one, and NaN cannot be recorded or judged."""
    from edgehub.toolchains.datasets import first_non_finite, non_finite_kind

    index = first_non_finite(outputs)
    if index is None:
        return
    sample = dataset.names[index[0]] if index and index[0] < len(dataset) else "?"
    raise InvalidMeasurementError(
        f"the {which}'s output {name!r} holds {non_finite_kind(outputs, index)} for sample "
        f"{sample} (index {list(index[1:])}) though the samples are finite; its figures "
        "would not be numbers: check the model (its conversion, its quantization)"
    )
