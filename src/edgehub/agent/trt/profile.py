"""``trt.profile``: time an engine with trtexec (needs a GPU and the full-TensorRT image).

Request::

    {"engine": PATH, "iterations": 100, "warmup_ms": 200, "duration_s": 0,
     "method": "python" | "layerwise" | "model", "extra_args": null | ["--useSpinWait", ...],
     "log": PATH, "times_json": PATH, "profile_json": null | PATH,
     "shapes": null | {input: [ints]}   (trtexec's --shapes, for an engine built for a range),
     "until_stable": false, "stable_tolerance": 0.05, "stable_max_s": 60}

trtexec runs ``--loadEngine`` with ``--percentile=50,90,95,99`` and ``--exportTimes`` (every
timed query); ``layerwise`` adds ``--exportProfile`` with ``--separateProfileRun``, so per-layer
timing does not slow the timed runs. The host parses the log and the JSON files. With
``until_stable`` each window is one trtexec run (:mod:`..stable`); ``times_json`` then holds the
last three windows' queries and the log is the last window's.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from ..protocol import CommandOutput, Params, RuntimeFailure, UsageError
from ..report import Report
from ..stable import Stability, measure_until_stable, stable_metrics
from .engine_check import check_engine, require_engine_file
from .trtexec import check_extra_args, require_gpu_and_trtexec, run_trtexec

MAX_TIMES_BYTES = 256 * 1024 * 1024


def window_queries(text: str) -> list[Any]:
    """The queries of one ``--exportTimes`` file that carry a latency, as trtexec wrote them."""
    try:
        entries = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RuntimeFailure(f"trtexec's times export is not JSON: {exc}") from None
    if not isinstance(entries, list):
        raise RuntimeFailure("trtexec's times export must be a JSON list of queries")
    return [
        e for e in entries if isinstance(e, dict) and isinstance(e.get("latencyMs"), (int, float))
    ]


def latencies_ns(queries: list[Any]) -> list[int]:
    """Each query's latency in ns."""
    return [int(float(q["latencyMs"]) * 1e6) for q in queries]


def windowed_times(
    run_window: Callable[[], list[Any]], tolerance: float, max_s: float
) -> tuple[list[Any], dict[str, Any]]:
    """Run trtexec windows (``run_window`` returns one window's queries) until stable; the
    last three windows' queries and the ``stable_*`` metrics."""
    kept: list[list[Any]] = []

    def window() -> list[int]:
        queries = run_window()
        if not queries:
            raise RuntimeFailure("trtexec exported no timed queries; see its log")
        kept.append(queries)
        del kept[:-3]
        return latencies_ns(queries)

    # one trtexec run is one window: it lasts trtexec's own --duration (3 s unless set)
    found = measure_until_stable(window, tolerance=tolerance, max_s=max_s, min_window_s=0)
    return [q for queries in kept for q in queries], stable_metrics(found)


def run(params: Params, report: Report) -> CommandOutput:
    engine = params.path("engine")
    iterations = params.integer("iterations", 100, minimum=1)
    warmup_ms = params.integer("warmup_ms", 200, minimum=0)
    duration_s = params.integer("duration_s", 0, minimum=0)
    method = params.choice("method", ("python", "layerwise", "model"), "layerwise")
    extra = check_extra_args(params.string_list("extra_args"))
    log = params.path("log")
    times_json = params.path("times_json")
    profile_json = params.path("profile_json", required=False)
    shapes = params.raw_value("shapes")
    stability = Stability.read(params, windows=False)
    record = params.raw_value("engine_record")
    params.finish()
    require_engine_file(str(engine))
    if shapes is not None and not (
        isinstance(shapes, dict) and all(isinstance(v, list) for v in shapes.values())
    ):
        raise UsageError(f"shapes must be {{input: [ints]}}, got {shapes!r}")
    check_engine(record)
    trtexec = require_gpu_and_trtexec("trt.profile")
    argv = [
        trtexec,
        f"--loadEngine={engine}",
        f"--iterations={iterations}",
        f"--warmUp={warmup_ms}",
        f"--duration={duration_s}",
        "--percentile=50,90,95,99",
    ]
    if shapes:
        argv.append(
            "--shapes=" + ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())
        )
    if method == "layerwise" and profile_json:
        argv += [f"--exportProfile={profile_json}", "--separateProfileRun"]
    metrics: dict[str, Any] = {}
    if stability is None:
        run_trtexec([*argv, f"--exportTimes={times_json}", *extra], log, report)
    else:
        window_file = times_json + ".window"

        def run_window() -> list[Any]:
            run_trtexec([*argv, f"--exportTimes={window_file}", *extra], log, report)
            if os.path.getsize(window_file) > MAX_TIMES_BYTES:
                raise RuntimeFailure("trtexec's times export is too large; lower iterations")
            with open(window_file, encoding="utf-8") as fh:
                return window_queries(fh.read())

        queries, metrics = windowed_times(run_window, stability.tolerance, stability.max_s)
        os.unlink(window_file)
        with open(times_json, "w", encoding="utf-8") as fh:
            json.dump(queries, fh)
        stability.tell(metrics, report)
    data = {"log": log, "times_json": times_json, "profile_json": profile_json}
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)
