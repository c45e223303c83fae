"""LiteRT's ``benchmark_model`` output (TensorFlow Lite 2.4 to LiteRT 1.x) read into edgehub's
profile figures: the per-phase ``count=N ... avg=US`` lines, the inference timings, the memory
footprint lines, the delegate line, and with ``--enable_op_profiling=true`` (stdout mode) the
"Run Order" table of the regular runs.

Only aggregates are printed (no per-run samples), so the statistics are the tool's own:
``$latency`` is its median where printed, else its average.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_NUMBER = r"[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
_STAT = re.compile(rf"\b(count|first|curr|min|max|avg|std|p5|median|p95)=({_NUMBER})")
_TIMINGS = re.compile(r"Inference timings in us:(.*)")
_TIMING_PART = re.compile(rf"([A-Za-z][A-Za-z ()]*?):\s*({_NUMBER})")
_FOOTPRINT = re.compile(
    rf"(?:Memory footprint delta[^:]*|Peak memory footprint \(MB\)):\s*"
    rf"init=({_NUMBER})\s+overall=({_NUMBER})"
)
_PEAK = re.compile(rf"Overall peak memory footprint \(MB\)[^:]*:\s*({_NUMBER})")
_DELEGATE = re.compile(r"Explicitly applied (\S+) delegate, and the model graph will be (\w+)")
_OP_TABLE = "Operator-wise Profiling Info for Regular Benchmark Runs"
_UNITS = (
    ("coreml", "NPU"),
    ("hexagon", "NPU"),
    ("nnapi", "NPU"),
    ("gpu", "GPU"),
    ("xnnpack", "CPU"),
)


@dataclass
class BenchmarkLog:
    """The figures one ``benchmark_model`` log gives (times in ms, memory in MB)."""

    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)
    op_profile: bool = False


def _strip(line: str) -> str:
    line = line.strip()
    for prefix in ("INFO:", "I ", "WARNING:", "ERROR:"):
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    return line


def _stat_lines(lines: list[str]) -> list[dict[str, float]]:
    found = []
    for line in lines:
        pairs = dict(_STAT.findall(line))
        if {"count", "avg"} <= pairs.keys():
            found.append({k: float(v) for k, v in pairs.items()})
    return found


def _unit(kind: str, name: str, delegate: str) -> str:
    lowered = kind.lower()
    for word, unit in _UNITS:
        if word in lowered:
            return unit
    if name.startswith("Delegate/") and "gpu" in delegate.lower():
        return "GPU"
    return "CPU"


def _op_rows(lines: list[str], delegate: str) -> list[dict[str, Any]]:
    """The rows of the regular runs' "Run Order" table, in run order."""
    try:
        start = next(i for i, line in enumerate(lines) if _OP_TABLE in line)
    except StopIteration:
        return []
    rows: list[dict[str, Any]] = []
    in_table = False
    for raw in lines[start + 1 :]:
        line = _strip(raw)
        if "Run Order" in line:
            in_table = True
            continue
        if not in_table:
            continue
        if line.startswith("[node type]"):
            continue
        if not line or line.startswith("="):
            if rows:
                break
            continue
        cells = raw.strip().split("\t") if "\t" in raw else re.split(r"\s{2,}", line)
        cells = [c.strip() for c in cells if c.strip()]
        if len(cells) < 8:
            continue
        kind, name = cells[0], "\t".join(cells[7:])
        try:
            avg_ms = float(cells[2])
            share = float(cells[3].rstrip("%"))
        except ValueError:
            continue
        rows.append(
            {
                "index": len(rows),
                "name": name,
                "type": kind,
                "time_us": round(avg_ms * 1000.0, 3),
                "percent": share,
                "compute_unit": _unit(kind, name, delegate),
            }
        )
    return rows


def parse_benchmark_log(text: str) -> BenchmarkLog:
    """The figures of ``text``; a log without a timed phase gives no ``latency`` metric."""
    lines = text.splitlines()
    stripped = [_strip(line) for line in lines]
    out = BenchmarkLog()
    stats = _stat_lines(stripped)
    if stats:
        timed = stats[-1]  # the tool prints the warm-up phase first, the timed runs last
        us = 1000.0
        out.metrics["runs"] = timed["count"]
        out.metrics["latency_mean_ms"] = round(timed["avg"] / us, 6)
        for key in ("min", "max", "std", "median", "p5", "p95"):
            if key in timed:
                out.metrics[f"latency_{key}_ms"] = round(timed[key] / us, 6)
        latency = out.metrics.get("latency_median_ms", out.metrics["latency_mean_ms"])
        out.metrics["latency"] = latency
        if out.metrics["latency_mean_ms"] > 0:
            out.metrics["fps"] = round(1000.0 / out.metrics["latency_mean_ms"], 3)
        if "std" in timed and timed["avg"] > 0:
            out.metrics["latency_cv_pct"] = round(100.0 * timed["std"] / timed["avg"], 2)
    for line in stripped:
        timings = _TIMINGS.search(line)
        if timings:
            parts = {k.strip().lower(): float(v) for k, v in _TIMING_PART.findall(timings.group(1))}
            if "init" in parts:
                out.metrics["load_time"] = round(parts["init"] / 1000.0, 6)
            if "first inference" in parts:
                out.metrics["first_inference_ms"] = round(parts["first inference"] / 1000.0, 6)
        footprint = _FOOTPRINT.search(line)
        if footprint and "peak_memory_usage" not in out.metrics:
            out.metrics["init_memory_mb"] = float(footprint.group(1))
            out.metrics["peak_memory_usage"] = float(footprint.group(2))
        peak = _PEAK.search(line)
        if peak:
            out.metrics["peak_memory_footprint_mb"] = float(peak.group(1))
        delegate = _DELEGATE.search(line)
        if delegate and "delegate" not in out.params:
            out.params["delegate"] = delegate.group(1)
            out.params["delegate_coverage"] = delegate.group(2)
    out.layers = _op_rows(lines, out.params.get("delegate", ""))
    out.op_profile = bool(out.layers)
    if out.layers:
        out.metrics["num_layers"] = float(len(out.layers))
        for unit in sorted({row["compute_unit"] for row in out.layers}):
            count = sum(1 for row in out.layers if row["compute_unit"] == unit)
            out.metrics[f"num_layers_{unit.lower()}"] = float(count)
    return out
