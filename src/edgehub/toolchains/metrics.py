"""Accuracy figures: how far a model's outputs are from the reference's, and task metrics.

Per output and per sample: ``cosine``, ``max_abs``, ``mean_abs``, ``snr_db`` and ``psnr_db``
(the reference's value range as peak; identical outputs read ``IDENTICAL_DB``). Task metrics
score a sample's output against its label, else the reference's output: ``top1``/``top5``,
``iou`` (of class masks: the argmax over axis 1 of a float output), ``mse``, and any function
``(output, target) -> float`` of the entry point group ``edgehub.metrics``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:
    import numpy as np


ENTRY_POINT_GROUP = "edgehub.metrics"
IDENTICAL_DB = 300.0
FIGURE_BLOCK_VALUES = 1 << 20  # values per float64 block of `output_figures` (8 MiB)
OUTPUT_FIGURES = ("cosine", "cosine_min", "max_abs", "mean_abs", "snr_db", "psnr_db")
BUILT_IN_TASKS = ("top1", "top5", "iou", "mse")

TaskMetric = Callable[[Any, Any], float]


def _db(signal: float, noise: float) -> float:
    if noise <= 0.0:
        return IDENTICAL_DB
    if signal <= 0.0:
        return -IDENTICAL_DB
    return min(IDENTICAL_DB, 10.0 * math.log10(signal / noise))


def output_figures(output: np.ndarray, reference: np.ndarray) -> dict[str, list[float]]:
    """Per-sample figures of ``output`` against ``reference`` (both stacked over samples),
    in float64, a block of samples at a time (so the float64 copies stay small)."""
    import numpy as np

    count = output.shape[0]
    a_all = output.reshape(count, -1)
    b_all = reference.reshape(count, -1)
    width = a_all.shape[1]
    rows = max(1, FIGURE_BLOCK_VALUES // max(width, 1))
    fields = ("cosine", "max_abs", "mean_abs", "power", "squared", "peak")
    found = {name: np.zeros(count) for name in fields}
    for start in range(0, count if width else 0, rows):
        block = slice(start, start + rows)
        a = a_all[block].astype(np.float64)
        b = b_all[block].astype(np.float64)
        aa, bb = np.einsum("ij,ij->i", a, a), np.einsum("ij,ij->i", b, b)
        dots = np.einsum("ij,ij->i", a, b)
        norms = np.sqrt(aa) * np.sqrt(bb)
        cosine = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
        found["cosine"][block] = np.where((aa == 0) & (bb == 0), 1.0, cosine)
        np.subtract(a, b, out=a)  # a is the difference from here on
        found["squared"][block] = np.einsum("ij,ij->i", a, a) / width
        np.abs(a, out=a)
        found["max_abs"][block] = a.max(axis=1)
        found["mean_abs"][block] = a.mean(axis=1)
        found["power"][block] = bb / width
        span = b.max(axis=1) - b.min(axis=1)
        top = np.abs(b).max(axis=1)
        found["peak"][block] = np.where(span > 0, span, np.where(top > 0, top, 1.0))
    if not width:
        found["cosine"][:] = 1.0
    squared, power, peak = found["squared"], found["power"], found["peak"]
    return {
        "cosine": found["cosine"].tolist(),
        "max_abs": found["max_abs"].tolist(),
        "mean_abs": found["mean_abs"].tolist(),
        "snr_db": [_db(float(s), float(n)) for s, n in zip(power, squared, strict=True)],
        "psnr_db": [_db(float(p) ** 2, float(n)) for p, n in zip(peak, squared, strict=True)],
    }


def summarize_figures(per_sample: dict[str, list[float]]) -> dict[str, float]:
    """Over the samples: the mean of each figure, ``cosine_min``, and the largest ``max_abs``."""
    summary = {name: _mean(values) for name, values in per_sample.items()}
    summary["cosine_min"] = min(per_sample["cosine"])
    summary["max_abs"] = max(per_sample["max_abs"])
    return {name: summary[name] for name in OUTPUT_FIGURES}


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def _scores(output: Any) -> Any:
    import numpy as np

    array = np.asarray(output)
    return array.reshape(-1, array.shape[-1]) if array.ndim else array.reshape(1, 1)


def _classes(target: Any, rows: int, width: int) -> Any:
    """Target classes of a sample: its ints, or the argmax of one-hot / score vectors."""
    import numpy as np

    array = np.asarray(target)
    if array.size == rows * width and width > 1 and (array.dtype.kind == "f" or array.size > rows):
        return array.reshape(rows, width).argmax(axis=1)
    flat = array.reshape(-1).astype(np.int64)
    if flat.size != rows:
        raise UsageError(
            f"a label of {flat.size} values does not fit an output of {rows} rows of "
            f"{width} scores; give one class index per row"
        )
    return flat


def top_k(k: int) -> TaskMetric:
    def metric(output: Any, target: Any) -> float:
        import numpy as np

        scores = _scores(output)
        classes = _classes(target, scores.shape[0], scores.shape[1])
        best = np.argsort(-scores, axis=1, kind="stable")[:, : min(k, scores.shape[1])]
        return float(np.mean([c in row for c, row in zip(classes, best, strict=True)]))

    return metric


def _mask(value: Any) -> Any:
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    return array.argmax(axis=1) if array.ndim >= 2 else np.rint(array).astype(np.int64)


def iou(output: Any, target: Any) -> float:
    """Mean over the classes present in either mask of |both| / |either|."""
    import numpy as np

    predicted = _mask(output)
    wanted = _mask(target)
    if wanted.size != predicted.size:
        raise UsageError(
            f"iou: a target mask of {wanted.size} values does not fit the predicted mask of "
            f"{predicted.size}; give class-index masks of the output's spatial shape"
        )
    predicted, wanted = predicted.reshape(-1), wanted.reshape(-1)
    scores = []
    for label in np.union1d(predicted, wanted):
        both = np.sum((predicted == label) & (wanted == label))
        either = np.sum((predicted == label) | (wanted == label))
        scores.append(both / either)
    return float(np.mean(scores)) if scores else 1.0


def mse(output: Any, target: Any) -> float:
    import numpy as np

    a = np.asarray(output, dtype=np.float64)
    b = np.asarray(target, dtype=np.float64)
    if a.size != b.size:
        raise UsageError(f"mse: a target of {b.size} values does not fit an output of {a.size}")
    return float(np.mean((a.reshape(-1) - b.reshape(-1)) ** 2))


def _target_for_reference(name: str, reference: Any) -> Any:
    """Without labels the reference's own output is the target: its classes, its mask."""
    import numpy as np

    if name in ("top1", "top5"):
        return _scores(reference).argmax(axis=1)
    if name == "iou":
        return _mask(reference)
    return np.asarray(reference)


def task_metric(name: str) -> TaskMetric:
    """The per-sample function of ``name``: built in, else from ``edgehub.metrics``."""
    from importlib.metadata import entry_points

    built_in = {"top1": top_k(1), "top5": top_k(5), "iou": iou, "mse": mse}
    if name in built_in:
        return built_in[name]
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name not in found:
        known = ", ".join([*BUILT_IN_TASKS, *sorted(found)])
        raise UsageError(
            f"unknown metric {name!r}; known: {known} (add one through the entry point group "
            f"{ENTRY_POINT_GROUP!r})"
        )
    function = found[name].load()
    if not callable(function):
        raise UsageError(f"metric {name!r} ({found[name].value}) is not a function")
    return function  # type: ignore[no-any-return]


def score(
    name: str,
    function: TaskMetric,
    outputs: np.ndarray,
    references: np.ndarray,
    labels: list[Any] | None,
) -> tuple[list[float], list[float]]:
    """Per-sample values of the model and of the reference: against the labels, else the
    model against the reference (the reference then scores itself)."""
    model_values, reference_values = [], []
    for index in range(outputs.shape[0]):
        if labels is not None:
            target = labels[index]
        else:
            target = _target_for_reference(name, references[index])
        reference_values.append(float(function(references[index], target)))
        try:
            model_values.append(float(function(outputs[index], target)))
        except UsageError as error:
            raise UsageError(f"sample {index}: {error}") from None
    return model_values, reference_values
