"""Parsing onnxruntime's profiling trace (the ``enable_profiling`` JSON, Chrome trace format).

The file is a JSON array of complete events (``"ph": "X"``, ``ts``/``dur`` in µs). Used:

- ``cat == "Node"`` events named ``<node>_kernel_time``: one per node execution, with
  ``args.op_name`` / ``args.provider`` (older releases' ``_fence_*`` events are ignored);
- ``cat == "Session"`` events named ``model_run``: one per ``session.run``; a node event belongs
  to the run whose window holds its start, so warm-up runs can be dropped.

A trailing comma, a missing closing bracket or a file cut off mid-event (a killed process) is
tolerated: every complete event is kept and ``truncated`` reported. Unnamed nodes are reported
as ``(unnamed <op>)``, grouped per op type and provider.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict

KERNEL_SUFFIX = "_kernel_time"

Event = Dict[str, Any]


@dataclass
class LayerRow:
    name: str
    op_type: str
    provider: str
    calls: int = 0
    total_us: float = 0.0

    def to_json(self, grand_total_us: float) -> dict[str, Any]:
        return {
            "name": self.name,
            "op_type": self.op_type,
            "provider": self.provider,
            "calls": self.calls,
            "total_us": round(self.total_us, 3),
            "mean_us": round(self.total_us / self.calls, 3) if self.calls else 0.0,
            "share": round(self.total_us / grand_total_us, 4) if grand_total_us > 0 else 0.0,
        }


@dataclass
class TraceSummary:
    layers: list[dict[str, Any]] = field(default_factory=list)
    model_runs: int = 0
    model_run_mean_ms: float | None = None
    model_run_samples_us: list[float] = field(default_factory=list)
    skipped_runs: int = 0
    events: int = 0
    truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_events(text: str) -> tuple[list[Event], bool]:
    """All complete event objects in ``text``, and whether the document was damaged."""
    stripped = text.strip()
    try:
        parsed = json.loads(stripped)
    except ValueError:
        pass
    else:
        if isinstance(parsed, list):
            return [e for e in parsed if isinstance(e, dict)], False
        if isinstance(parsed, dict) and isinstance(parsed.get("traceEvents"), list):
            return [e for e in parsed["traceEvents"] if isinstance(e, dict)], False
    return _scan_events(stripped)


def _scan_events(text: str) -> tuple[list[Event], bool]:
    """Decode objects one by one after the opening bracket, stopping at the first bad one."""
    decoder = json.JSONDecoder()
    events: list[Event] = []
    start = text.find("[")
    if start < 0:
        return events, True
    pos = start + 1
    complete = False
    while pos < len(text):
        char = text[pos]
        if char in " \t\r\n,":
            pos += 1
            continue
        if char == "]":
            complete = True
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break
        if isinstance(obj, dict):
            events.append(obj)
    # A trailing comma before "]" is ORT's own quirk, not damage.
    return events, not complete


def summarize(events: list[Event], skip_runs: int = 0, truncated: bool = False) -> TraceSummary:
    """Per-node rows (sorted by total time) and the model_run summary, minus the first runs."""
    sessions = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    runs = sorted(
        ((float(e.get("ts", 0)), float(e.get("dur", 0))) for e in sessions), key=lambda r: r[0]
    )
    skipped = runs[:skip_runs]
    kept = runs[skip_runs:]

    def run_index(ts: float) -> int | None:
        return next((i for i, (start, dur) in enumerate(runs) if start <= ts <= start + dur), None)

    rows: dict[tuple[str, str, str], LayerRow] = {}
    for event in events:
        name = event.get("name")
        if event.get("cat") != "Node" or not isinstance(name, str):
            continue
        if not name.endswith(KERNEL_SUFFIX):
            continue
        if runs:
            index = run_index(float(event.get("ts", 0)))
            if index is None or index < len(skipped):
                continue  # a dropped warm-up run, or a run cut off before its model_run event
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        assert isinstance(args, dict)
        op_type = str(args.get("op_name", ""))
        provider = str(args.get("provider", ""))
        node = name[: -len(KERNEL_SUFFIX)] or f"(unnamed {op_type or 'node'})"
        row = rows.setdefault((node, op_type, provider), LayerRow(node, op_type, provider))
        row.calls += 1
        row.total_us += float(event.get("dur", 0))
    grand_total = sum(r.total_us for r in rows.values())
    ordered = sorted(rows.values(), key=lambda r: (-r.total_us, r.name))
    samples = [round(dur, 3) for _, dur in kept]
    return TraceSummary(
        layers=[r.to_json(grand_total) for r in ordered],
        model_runs=len(kept),
        model_run_mean_ms=round(sum(samples) / len(samples) / 1000.0, 3) if samples else None,
        model_run_samples_us=samples,
        skipped_runs=len(skipped),
        events=len(events),
        truncated=truncated,
    )


def parse_trace(path: str | Path, skip_runs: int = 0) -> TraceSummary:
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    events, truncated = load_events(text)
    return summarize(events, skip_runs=skip_runs, truncated=truncated)
