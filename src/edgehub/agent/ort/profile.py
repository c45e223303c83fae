"""``ort.profile``: cold starts, warm latency statistics and (optionally) a per-node profile.

Request::

    {"model": PATH, "runs": 100, "warmup": 10, "cold_starts": 1,
     "method": "python" | "layerwise" | "model", "input_data": null | NPZ | DIR,
     "intra_op_threads": null | int, "inter_op_threads": null | int,
     "profile_json": null | PATH, "providers": null | [names], "seed": 0,
     "graph_optimization_level": "disable" | "basic" | "extended" | "all" (default "all"),
     "input_shape": null | [ints] | {name: [ints]}   (shapes of the generated random inputs),
     "until_stable": false, "stable_tolerance": 0.05, "stable_max_s": 60,
     "stable_window_s": 1, "stable_max_other_share": 0.25}

Inputs (:mod:`..inputs`): ``input_data`` (one .npz sample or a directory of them) cycles over
the warm-up and timed runs in name order; without it, random data (``seed``) at
``input_shape``, other dynamic dims 1. ``shapes`` (params, data, profile.json) records them.

1. Cold starts: each creates a new session (``session_create_ms``) and runs it once
   (``first_run_ms``): the means are metrics, the list is ``data.cold_starts``.
2. The last session runs ``warmup`` untimed runs, then ``runs`` timed ones with
   ``perf_counter_ns`` tightly around each ``session.run`` and ORT profiling off: a bare loop.
   ``until_stable`` repeats windows of timed runs until they agree (:mod:`..stable`; metrics
   ``stable_*``, each window in ``data.windows``); not converging does not fail the run.
3. ``layerwise``/``model`` only: a separate session with ORT profiling runs once (dropped) plus
   ``min(runs, 20)`` times; its trace (:mod:`.trace`) gives per-node rows (``layerwise``) and
   the mean ``model_run`` time.

Metrics: the latency statistics of :mod:`..stats` (ms), session_create_ms, first_run_ms,
peak_rss_mb (the process's high-water resident set), runs, warmup, cold_starts; with a trace
model_run_mean_ms, profiled_runs and (layerwise) num_layers. ``profile_json`` receives
``{samples_us, cold_starts, stats, layers, trace, env, settings, conditions}``;
``data.conditions`` is what the timed loop ran under (:mod:`..conditions`).
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ..inputs import prepare_inputs, shapes_record
from ..models import resolve_model_path
from ..protocol import CommandOutput, Params
from ..report import Report
from ..resources import peak_rss_mb
from ..stable import Stability, latency_metrics, timed_loop, write_profile
from ..stats import mean, ms
from ..tensors import Arrays
from .sessions import SessionSettings, create_session, input_specs, run_failures, run_once
from .trace import TraceSummary, parse_trace

MAX_PROFILED_RUNS = 20


def timed_runs(session: Any, inputs: list[Arrays], runs: int, start_at: int = 0) -> list[int]:
    """``runs`` samples in ns, perf_counter_ns tightly around each session.run; the inputs
    cycle from ``start_at`` (one sample: the same feeds every run, exactly as a bare loop)."""
    run = session.run
    clock = time.perf_counter_ns
    samples = [0] * runs
    if len(inputs) == 1:
        feeds = inputs[0]
        for i in range(runs):
            start = clock()
            run(None, feeds)
            samples[i] = clock() - start
        return samples
    count = len(inputs)
    for i in range(runs):
        feeds = inputs[(start_at + i) % count]
        start = clock()
        run(None, feeds)
        samples[i] = clock() - start
    return samples


def trace_profile(
    path: Path, settings: SessionSettings, inputs: list[Arrays], runs: int
) -> TraceSummary:
    """Run a separate profiling session and parse (then delete) its trace."""
    tmp = tempfile.mkdtemp(prefix="edgehub-agent-trace-")
    try:
        options = settings.options()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "ort_profile")
        session = create_session(path, options, settings.providers)
        run_once(session, inputs[0])  # first run of a new session: dropped from the summary
        for i in range(runs):
            run_once(session, inputs[i % len(inputs)])
        trace_file = session.end_profiling()
        del session
        return parse_trace(trace_file, skip_runs=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    runs = params.integer("runs", 100, minimum=1)
    warmup = params.integer("warmup", 10, minimum=0)
    cold_starts = params.integer("cold_starts", 1, minimum=1)
    method = params.choice("method", ("python", "layerwise", "model"), "python")
    input_data = params.path("input_data", required=False)
    profile_json = params.path("profile_json", required=False)
    session_settings = SessionSettings.read(params, optimization_level=True)
    seed = params.integer("seed", 0)
    raw_shape = params.raw_value("input_shape")
    stability = Stability.read(params)
    params.finish()
    path = resolve_model_path(model_arg)

    cold: list[dict[str, float]] = []
    session: Any = None
    inputs: list[Arrays] = []
    for index in range(cold_starts):
        session = None
        gc.collect()
        options = session_settings.options()
        start = time.perf_counter_ns()
        session = create_session(path, options, session_settings.providers)
        created = time.perf_counter_ns() - start
        if index == 0:
            specs = input_specs(session, path if input_data is None else None)
            inputs = prepare_inputs(specs, input_data, raw_shape, seed, report)
        start = time.perf_counter_ns()
        run_once(session, inputs[0])
        first = time.perf_counter_ns() - start
        cold.append({"session_create_ms": ms(created), "first_run_ms": ms(first)})
        report.info(
            f"cold start {index + 1}/{cold_starts}: session {ms(created):.3f} ms, "
            f"first run {ms(first):.3f} ms"
        )

    report.info(f"warmup: {warmup} runs")
    for i in range(warmup):
        run_once(session, inputs[i % len(inputs)])
    if stability:
        stability.warm(lambda i: run_once(session, inputs[i % len(inputs)]), report)
    report.info(f"timing: {runs} runs" + (" per window, until stable" if stability else ""))

    def window() -> list[int]:
        with run_failures():
            return timed_runs(session, inputs, runs)

    # No gc.collect() here: measured in the image, a collection right before the timed loop
    # made session.run ~2-6 % slower than a bare loop's (the loop must match a bare one).
    samples, stable, windows, conditions = timed_loop(stability, window, report)
    session = None
    metrics = latency_metrics(samples, stable, runs, "intra_op_threads", report)
    metrics.update(
        {
            "session_create_ms": round(mean([c["session_create_ms"] for c in cold]), 3),
            "first_run_ms": round(mean([c["first_run_ms"] for c in cold]), 3),
            "runs": runs,
            "warmup": warmup,
            "cold_starts": cold_starts,
        }
    )

    trace: TraceSummary | None = None
    if method in ("layerwise", "model"):
        profiled = min(runs, MAX_PROFILED_RUNS)
        report.info(f"{method}: {profiled} runs with onnxruntime profiling")
        trace = trace_profile(path, session_settings, inputs, profiled)
        metrics["model_run_mean_ms"] = trace.model_run_mean_ms
        metrics["profiled_runs"] = trace.model_runs
        if trace.truncated:
            report.warn("the onnxruntime trace was truncated; the per-node numbers are partial")
        if method == "layerwise":
            metrics["num_layers"] = len(trace.layers)
            for row in trace.layers[:5]:
                report.info(
                    f"  {row['name']} ({row['op_type']}, {row['provider']}): "
                    f"{row['mean_us']:.1f} us, {100 * row['share']:.1f}%"
                )
    metrics["peak_rss_mb"] = peak_rss_mb()

    params.resolved["shapes"] = shapes_record(inputs)
    params.resolved["input_samples"] = len(inputs)
    source = "npz" if input_data else "random"
    data: dict[str, Any] = {
        "cold_starts": cold,
        "shapes": params.resolved["shapes"],
        "input_source": source,
        "conditions": conditions,
    }
    if windows:
        data["windows"] = windows
    layers = trace.layers if (trace is not None and method == "layerwise") else []
    if method == "layerwise":
        data["layers"] = layers
    if trace is not None:
        data["model_run_mean_ms"] = trace.model_run_mean_ms
    if profile_json:
        extra: dict[str, Any] = {}
        if trace is not None:
            summary = trace.to_json()
            summary.pop("layers")
            extra = {"layers": layers, "trace": summary}
        settings = dict(params.resolved, model_path=str(path), input_source=source)
        write_profile(
            profile_json, samples, cold, metrics, settings, conditions, windows, report, **extra
        )
        data["profile_json"] = profile_json
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)
