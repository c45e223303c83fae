"""Reading what trtexec writes (its summary, per-query times, per-layer profile and exported
outputs), for every provider that runs trtexec.

The summary lines of TensorRT 8.6 and 10.x end with one ``percentile(P%)`` per requested
percentile; 8.0 to 8.5 print one and an extra ``End-to-End Host Latency`` line. Lines may
carry a ``[date-time] [I]`` prefix; numbers may be in exponent notation.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# statistic line name -> metric prefix
SUMMARY_STATISTICS = {
    "Latency": "latency",
    "Enqueue Time": "enqueue",
    "H2D Latency": "h2d",
    "GPU Compute Time": "gpu_compute",
    "D2H Latency": "d2h",
    "End-to-End Host Latency": "end_to_end",
}
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_STAT_LINE = re.compile(
    r"(?:^|\]\s*)(?P<name>" + "|".join(re.escape(k) for k in SUMMARY_STATISTICS) + r"):\s*"
    rf"min = (?P<min>{_NUMBER}) ms, max = (?P<max>{_NUMBER}) ms, mean = (?P<mean>{_NUMBER}) ms, "
    rf"median = (?P<median>{_NUMBER}) ms(?P<rest>.*)$"
)
_PERCENTILE = re.compile(rf"percentile\((?P<p>{_NUMBER})%\) = (?P<v>{_NUMBER}) ms")
_THROUGHPUT = re.compile(rf"Throughput: (?P<v>{_NUMBER}) qps")
_WALLTIME = re.compile(rf"Total Host Walltime: (?P<v>{_NUMBER}) s")
_GPU_TOTAL = re.compile(rf"Total GPU Compute Time: (?P<v>{_NUMBER}) s")
_UNSTABLE = re.compile(rf"coefficient of variance = (?P<v>{_NUMBER}) ?%")
_TRACE = re.compile(rf"Timing trace has (?P<n>\d+) queries over (?P<s>{_NUMBER}) s")
_WARMUP = re.compile(rf"Warmup completed (?P<n>\d+) queries over (?P<ms>{_NUMBER}) ms")
_VERSION_TAG = re.compile(r"\[TensorRT v(?P<v>\d+)\]")
_VERSION_LINE = re.compile(r"TensorRT version: (?P<v>\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class Statistic:
    """One summary line, in milliseconds: percentiles keyed by their percent (e.g. 99.0)."""

    min: float
    max: float
    mean: float
    median: float
    percentiles: dict[float, float] = field(default_factory=dict)


@dataclass
class TrtexecSummary:
    """The performance summary of one trtexec run (empty fields where it printed nothing)."""

    version: str | None = None
    throughput_qps: float | None = None
    statistics: dict[str, Statistic] = field(default_factory=dict)
    host_walltime_s: float | None = None
    gpu_compute_total_s: float | None = None
    queries: int | None = None
    warmup_queries: int | None = None
    unstable_cov_pct: float | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.statistics) or self.throughput_qps is not None


def parse_version(text: str) -> str | None:
    """``10.4.0`` from ``TensorRT version: 10.4.0`` or from ``[TensorRT v100400]`` (8.x is
    ``v8xyy``, 10.x and later ``vMMmmpp``)."""
    line = _VERSION_LINE.search(text)
    if line:
        return line.group("v")
    tag = _VERSION_TAG.search(text)
    if not tag:
        return None
    digits = tag.group("v")
    if len(digits) == 4:  # 8601 -> 8.6.1 (one digit each for minor, two for patch)
        return f"{digits[0]}.{digits[1]}.{int(digits[2:])}"
    if len(digits) >= 6:  # 100400 -> 10.4.0
        return f"{int(digits[:-4])}.{int(digits[-4:-2])}.{int(digits[-2:])}"
    return None


def parse_summary(text: str) -> TrtexecSummary:
    """Read every summary line trtexec printed in ``text`` (its stdout)."""
    summary = TrtexecSummary(version=parse_version(text))
    for raw in text.splitlines():
        line = raw.strip()
        stat = _STAT_LINE.search(line)
        if stat:
            percentiles = {
                float(m.group("p")): float(m.group("v"))
                for m in _PERCENTILE.finditer(stat.group("rest"))
            }
            low, high, mean, median = (
                float(stat.group(k)) for k in ("min", "max", "mean", "median")
            )
            key = SUMMARY_STATISTICS[stat.group("name")]
            summary.statistics[key] = Statistic(low, high, mean, median, percentiles)
            continue
        for pattern, attribute in (
            (_THROUGHPUT, "throughput_qps"),
            (_WALLTIME, "host_walltime_s"),
            (_GPU_TOTAL, "gpu_compute_total_s"),
            (_UNSTABLE, "unstable_cov_pct"),
        ):
            match = pattern.search(line)
            if match:
                setattr(summary, attribute, float(match.group("v")))
        for pattern, attribute in ((_TRACE, "queries"), (_WARMUP, "warmup_queries")):
            match = pattern.search(line)
            if match:
                setattr(summary, attribute, int(match.group("n")))
        if "[W]" in line and "* " in line:  # trtexec's own advice, e.g. "* GPU compute time ..."
            summary.warnings.append(line.split("* ", 1)[1].strip())
    return summary


def _ms_key(value: float) -> str:
    text = f"{value:g}".replace(".", "_")
    return "median" if text == "50" else f"p{text}"


def summary_metrics(summary: TrtexecSummary) -> dict[str, float]:
    """Flat metrics: ``<stat>_{min,max,mean,median,pNN}_ms``, throughput, walltime."""
    metrics: dict[str, float] = {}
    for key, stat in summary.statistics.items():
        for name in ("min", "max", "mean", "median"):
            metrics[f"{key}_{name}_ms"] = getattr(stat, name)
        for percent, value in stat.percentiles.items():
            metrics[f"{key}_{_ms_key(percent)}_ms"] = value
    for name in ("throughput_qps", "host_walltime_s", "gpu_compute_total_s", "unstable_cov_pct"):
        value = getattr(summary, name)
        if value is not None:
            metrics[name] = value
    if summary.queries is not None:
        metrics["queries"] = float(summary.queries)
    return metrics


# -- exported JSON files ----------------------------------------------------------------------

_TIME_FIELDS = {"latencyMs": "latency", "computeMs": "gpu_compute", "h2dMs": "h2d",
                "d2hMs": "d2h"}  # fmt: skip


def _load(text: str | bytes, what: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"trtexec's {what} nests too deeply to be read") from None
    except ValueError as error:
        raise ValueError(f"trtexec's {what} is not JSON: {error}") from None


def parse_times(text: str | bytes) -> dict[str, list[float]]:
    """``--exportTimes``: per-query samples in ms for latency, gpu_compute, h2d, d2h and
    enqueue (``endEnqMs - startEnqMs``)."""
    entries = _load(text, "times export")
    if not isinstance(entries, list):
        raise ValueError("trtexec's times export must be a JSON list of queries")
    samples: dict[str, list[float]] = {name: [] for name in (*_TIME_FIELDS.values(), "enqueue")}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        for source, name in _TIME_FIELDS.items():
            if source in entry:
                samples[name].append(float(entry[source]))
        if "startEnqMs" in entry and "endEnqMs" in entry:
            samples["enqueue"].append(float(entry["endEnqMs"]) - float(entry["startEnqMs"]))
    return {name: values for name, values in samples.items() if values}


def parse_layer_profile(text: str | bytes) -> list[dict[str, Any]]:
    """``--exportProfile``: ``[{"count": N}, {name, timeMs, averageMs, medianMs, percentage}]``
    as rows ``{name, total_ms, mean_ms, median_ms, share, runs}``."""
    entries = _load(text, "profile export")
    if not isinstance(entries, list):
        raise ValueError("trtexec's profile export must be a JSON list")
    runs = next((int(e["count"]) for e in entries if isinstance(e, Mapping) and "count" in e), 0)
    rows = []
    for entry in entries:
        if not isinstance(entry, Mapping) or "name" not in entry:
            continue
        rows.append(
            {
                "name": str(entry["name"]),
                "total_ms": float(entry.get("timeMs", 0.0)),
                "mean_ms": float(entry.get("averageMs", 0.0)),
                "median_ms": float(entry.get("medianMs", entry.get("averageMs", 0.0))),
                "share": float(entry.get("percentage", 0.0)) / 100.0,
                "runs": runs,
            }
        )
    return rows


def _dimensions(text: Any) -> list[int]:
    if isinstance(text, list):
        return [int(d) for d in text]
    words = [w for w in str(text).replace(" ", "").split("x") if w]
    return [int(w) for w in words]


def parse_exported_outputs(
    text: str | bytes, dtypes: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``--exportOutput``: ``[{name, dimensions: "1x10", values: [...]}]`` as numpy arrays, each
    in ``dtypes[name]`` (the engine's type) when given, else float32."""
    import numpy as np

    entries = _load(text, "output export")
    if not isinstance(entries, list):
        raise ValueError("trtexec's output export must be a JSON list of tensors")
    outputs: dict[str, Any] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or "name" not in entry:
            continue
        name = str(entry["name"])
        shape = _dimensions(entry.get("dimensions", ""))
        dtype = np.dtype((dtypes or {}).get(name, "float32"))
        values = entry.get("values", [])
        array = np.asarray([_number(v) for v in values], dtype=np.float64)
        if dtype.kind in "iub":
            array = np.rint(array)
        expected = math.prod(shape) if shape else array.size
        if array.size != expected:
            raise ValueError(
                f"output '{name}' has {array.size} values but dimensions {shape} need {expected}"
            )
        outputs[name] = array.astype(dtype).reshape(shape)
    return outputs


def _number(value: Any) -> float:
    if isinstance(value, str):  # trtexec writes inf / nan as bare words in some versions
        return float(value.strip().lower())
    return float(value)
