"""``tflite.profile``: cold starts and warm latency statistics of a ``.tflite`` in LiteRT.

Request::

    {"model": PATH (.tflite), "runs": 100, "warmup": 10, "cold_starts": 1,
     "threads": null | int, "xnnpack": true, "input": null | NPZ, "mapping": null | PATH,
     "use_compiled_names": false, "seed": 0, "input_shape": null | [ints] | {name: [ints]},
     "max_secs": null | float, "run_delay": null | float,
     "op_profiling": false, "profile_json": null | PATH,
     "until_stable": false, "stable_tolerance": 0.05, "stable_max_s": 60,
     "stable_window_s": 1, "stable_max_other_share": 0.25}

Measured as ``ort.profile`` measures: cold starts (a new interpreter with its tensors
allocated: ``load_ms``, then one invoke: ``first_run_ms``), then on the last interpreter
``warmup`` untimed invokes and ``runs`` timed ones, ``perf_counter_ns`` tightly around each
``invoke()``. Inputs are ``input`` (ONNX names and layout unless ``use_compiled_names``:
:mod:`.edges`) or random in the model's dtypes. ``max_secs`` stops the timed runs early and
``run_delay`` sleeps between them (benchmark_model's meanings); ``until_stable``: see
:mod:`..stable`. ``data.conditions`` is what the timed loop ran under (:mod:`..conditions`).

The LiteRT Python interpreter has no op profiler (benchmark_model's ``enable_op_profiling`` is
C++ only): ``op_profiling`` lists the operators without times, with a warning. Metrics: the
latency statistics of :mod:`..stats` (ms), load_ms, first_run_ms, peak_rss_mb, runs, warmup,
cold_starts, num_ops.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..inputs import random_sample
from ..protocol import CommandOutput, Params, UsageError
from ..report import Report
from ..resources import peak_rss_mb
from ..stable import Stability, latency_metrics, timed_loop, timed_runs, write_profile
from ..stats import mean, ms
from .edges import ModelEdges
from .inspect import find_mapping
from .interpreter import load_interpreter, op_list, resolve_tflite_path, toolchain_versions
from .invoke import load_model_inputs

OP_PROFILING_NOTE = (
    "per-operator times are not available: the LiteRT Python interpreter has no op profiler "
    "(benchmark_model's enable_op_profiling is C++ only); the operators are listed without times"
)


def paced_runs(invoke: Any, runs: int, max_secs: float | None, delay: float) -> list[int]:
    """Like `timed_runs`, stopping after ``max_secs`` and sleeping ``delay`` s between runs."""
    clock = time.perf_counter_ns
    deadline = clock() + int(max_secs * 1e9) if max_secs else None
    samples: list[int] = []
    for i in range(runs):
        if i and delay > 0:
            time.sleep(delay)
        start = clock()
        invoke()
        samples.append(clock() - start)
        if deadline is not None and clock() >= deadline:
            break
    return samples


def model_feeds(
    edges: ModelEdges,
    input_arg: str | None,
    compiled: bool,
    seed: int,
    raw_shape: Any,
    report: Report,
) -> dict[int, Any]:
    """Inputs by tensor index: from ``input_arg`` or random, named as the class says."""
    if input_arg is not None:
        return edges.feeds(load_model_inputs(input_arg, edges, compiled), compiled)
    specs = edges.compiled_specs() if compiled else edges.original_specs()
    hint = "pass input (an .npz) or input_shape to profile other shapes"
    return edges.feeds(random_sample(specs, raw_shape, seed, report, hint), compiled)


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    runs = params.integer("runs", 100, minimum=1)
    warmup = params.integer("warmup", 10, minimum=0)
    cold_starts = params.integer("cold_starts", 1, minimum=1)
    threads = params.integer("threads", None, minimum=1)
    xnnpack = params.boolean("xnnpack", True)
    input_arg = params.path("input", required=False)
    mapping_arg = params.path("mapping", required=False)
    compiled = params.boolean("use_compiled_names", False)
    seed = params.integer("seed", 0)
    raw_shape = params.raw_value("input_shape")
    max_secs = params.raw_value("max_secs")
    run_delay = params.raw_value("run_delay")
    op_profiling = params.boolean("op_profiling", False)
    profile_json = params.path("profile_json", required=False)
    stability = Stability.read(params)
    params.finish()
    for key, value in (("max_secs", max_secs), ("run_delay", run_delay)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise UsageError(f"tflite.profile: parameter '{key}' must be a number, got {value!r}")

    path = resolve_tflite_path(model_arg, "TFLiteProfiler")
    mapping = find_mapping(Path(path), mapping_arg, report)
    cold: list[dict[str, float]] = []
    edges: ModelEdges | None = None
    feeds: dict[int, Any] = {}
    for index in range(cold_starts):
        edges = None
        start = time.perf_counter_ns()
        interpreter = load_interpreter(path, threads=threads, xnnpack=xnnpack)
        loaded = time.perf_counter_ns() - start
        edges = ModelEdges(interpreter, mapping)
        if index == 0:
            feeds = model_feeds(edges, input_arg, compiled, seed, raw_shape, report)
            report.info(f"inputs: {input_arg or 'random'}")
        edges.set_inputs(feeds)
        start = time.perf_counter_ns()
        edges.invoke()
        first = time.perf_counter_ns() - start
        cold.append({"load_ms": ms(loaded), "first_run_ms": ms(first)})
        report.info(
            f"cold start {index + 1}/{cold_starts}: load {ms(loaded):.3f} ms, "
            f"first run {ms(first):.3f} ms"
        )
    assert edges is not None
    report.info(f"warmup: {warmup} runs")
    for _ in range(warmup):
        edges.invoke()
    if stability:
        stability.warm(lambda _: edges.invoke(), report)
    per_window = " per window, until stable" if stability else ""
    report.info(
        f"timing: {runs} runs{per_window} (threads {threads or 'default'}, xnnpack {xnnpack})"
    )
    invoke = edges.interpreter.invoke

    def window() -> list[int]:
        if max_secs or run_delay:
            return paced_runs(invoke, runs, max_secs, float(run_delay or 0.0))
        return timed_runs(invoke, runs)

    samples, stable, windows, conditions = timed_loop(stability, window, report)
    metrics = latency_metrics(samples, stable, len(samples), "threads", report)
    ops = op_list(edges.interpreter)
    metrics.update(
        {
            "load_ms": round(mean([c["load_ms"] for c in cold]), 3),
            "first_run_ms": round(mean([c["first_run_ms"] for c in cold]), 3),
            "runs": len(samples),
            "warmup": warmup,
            "cold_starts": cold_starts,
            "num_ops": len(ops),
            "peak_rss_mb": peak_rss_mb(),
        }
    )
    data: dict[str, Any] = {
        "cold_starts": cold,
        "input_source": "npz" if input_arg else "random",
        "input_shapes": {t.name: list(t.shape) for t in edges.inputs},
        "toolchain": toolchain_versions(),
        "op_profiling": "unavailable" if op_profiling else "off",
        "conditions": conditions,
    }
    if windows:
        data["windows"] = windows
    layers = [{"index": int(op["index"]), "op_type": str(op["op_name"])} for op in ops]
    if op_profiling:
        report.warn(OP_PROFILING_NOTE)
        data["layers"] = layers
    if profile_json:
        note = OP_PROFILING_NOTE if op_profiling else "off"
        extra = {"ops": layers, "op_profiling": note, "toolchain": data["toolchain"]}
        settings = dict(params.resolved, model_path=str(path))
        write_profile(
            profile_json, samples, cold, metrics, settings, conditions, windows, report, **extra
        )
        data["profile_json"] = profile_json
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)
