"""An AI Hub profile as edgehub metrics and rows: the per-run times give the same statistics as
the local profilers (``$latency``: their median), else ``estimated_inference_time`` does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgehub.agent.stats import latency_stats
from edgehub.errors import ProfileError
from edgehub.toolchains.outputs import number
from edgehub.tracking.verdict_numbers import number_problem

MIB = float(1 << 20)
STAGES = ("compile", "first_load", "warm_load", "inference")
UNIT_ORDER = ("NPU", "GPU", "CPU")


@dataclass
class ProfileSummary:
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)
    compute_units: dict[str, int] = field(default_factory=dict)
    samples_us: list[float] = field(default_factory=list)


def _layers(detail: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    for index, layer in enumerate(detail):
        kind = str(layer.get("type") or "")
        name = str(layer.get("name") or "") or f"{kind.lower() or 'layer'}_{index}"
        seen[name] += 1
        if seen[name] > 1:  # keep names unique without renaming the other layers
            name = f"{name}#{seen[name]}"
        row: dict[str, Any] = {
            "index": index,
            "name": name,
            "type": kind,
            "compute_unit": str(layer.get("compute_unit") or ""),
        }
        if number(layer.get("execution_time")) is not None:
            row["time_us"] = float(layer["execution_time"])
        if number(layer.get("execution_cycles")) is not None:
            row["cycles"] = int(layer["execution_cycles"])
        rows.append(row)
    return rows


def _memory(summary: Mapping[str, Any], out: ProfileSummary) -> None:
    peak = number(summary.get("estimated_inference_peak_memory"))
    if peak is not None:
        out.metrics["peak_memory_usage"] = round(peak / MIB, 3)
    for stage in STAGES:
        for kind in ("increase", "peak"):
            pair = summary.get(f"{stage}_memory_{kind}_range")
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                low, high = (number(v) for v in pair)
                if low is not None and high is not None:
                    out.metrics[f"{stage}_memory_{kind}_min_mb"] = round(low / MIB, 3)
                    out.metrics[f"{stage}_memory_{kind}_max_mb"] = round(high / MIB, 3)
    low_high = (
        out.metrics.get("inference_memory_peak_min_mb"),
        out.metrics.get("inference_memory_peak_max_mb"),
    )
    if low_high[0] is not None and low_high[1] is not None:
        out.params["peak_memory_range"] = f"{low_high[0]:.2f}-{low_high[1]:.2f} MB"


def summarize_profile(profile: Mapping[str, Any]) -> ProfileSummary:
    """Metrics (``latency`` and friends in ms, memory in MiB), params, layer rows and the
    compute-unit breakdown of one AI Hub profile; per-iteration times that are not all finite
    positive numbers are a `ProfileError`."""
    summary: Mapping[str, Any] = profile.get("execution_summary") or {}
    out = ProfileSummary()
    raw = summary.get("all_inference_times") or []
    problem = number_problem(raw, "per-iteration inference times") if raw else None
    if problem is not None:  # NaN, text or a zero never reaches the statistics or a verdict
        raise ProfileError(
            f"the AI Hub profile has {problem}; the measurement is invalid, so its run is "
            "recorded FAILED"
        )
    samples = [float(v) for v in raw]
    estimated = number(summary.get("estimated_inference_time"))
    if estimated is not None:
        out.metrics["estimated_inference_time_ms"] = round(estimated / 1000.0, 3)
    if samples:
        out.samples_us = samples
        out.metrics.update(latency_stats([round(s * 1000) for s in samples]))
        out.metrics["latency"] = out.metrics["latency_median_ms"]
        out.metrics["runs"] = float(len(samples))
    elif estimated is not None and estimated > 0:
        out.metrics["latency"] = round(estimated / 1000.0, 3)
        out.metrics["fps"] = round(1e6 / estimated, 3)
    for stage in ("first_load", "warm_load", "compile"):
        value = number(summary.get(f"{stage}_time"))
        if value is not None:
            out.metrics[f"{stage}_time_ms"] = round(value / 1000.0, 3)
    if "warm_load_time_ms" in out.metrics:
        out.metrics["load_time"] = out.metrics["warm_load_time_ms"]
    _memory(summary, out)
    out.layers = _layers(list(profile.get("execution_detail") or []))
    counts = Counter(row["compute_unit"] for row in out.layers if row["compute_unit"])
    units = [u for u in UNIT_ORDER if u in counts] + sorted(set(counts) - set(UNIT_ORDER))
    out.compute_units = {unit: counts[unit] for unit in units}
    if out.layers:
        out.metrics["num_layers"] = float(len(out.layers))
        for unit, count in out.compute_units.items():
            out.metrics[f"num_layers_{unit.lower()}"] = float(count)
        parts = [f"{unit} ({count})" for unit, count in out.compute_units.items()]
        out.params["compute_units"] = " | ".join([*parts, f"Total ({len(out.layers)})"])
    return out
