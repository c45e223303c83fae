"""``trt.batch``: run TensorRT engines over every sample of a dataset in one call (needs a GPU).

Request::

    {"samples": NPZ | DIR, "stacked": false,
     "runs": [{"model": ENGINE PATH, "output": NPZ, "source": null | ONNX PATH,
               "build": {"precision": "fp32" | "fp16" | "int8", "shapes": ..., "input_shape": ...},
               "extra_outputs": [ONNX tensor names], "graph": false}]}

Samples as in ``ort.batch``, keyed by the engine's input names; each run's outputs stacked along
a new leading axis in one uncompressed ``.npz``. ``source`` is the ONNX model the engine was
built from and ``build`` the compile's settings: ``graph`` parses it (no GPU) and reports its
nodes with the outputs TensorRT's network has; ``extra_outputs`` builds the engine again with
those tensors marked as outputs and runs that one (:mod:`.marking`). Metrics: inference_ms,
load_ms (totals). Data: samples, runs [{outputs, inference_ms, load_ms, graph, engine_layers
{engine, probe} (with ``extra_outputs``, where TensorRT reports them)}].
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..inputs import batch_output, batch_request, dataset, stacked_info
from ..protocol import CommandOutput, Params, UsageError
from ..report import Report
from ..stats import ms
from ..tensors import Arrays, save_npz
from .cuda import Cuda
from .engine_check import require_engine_file
from .engine_run import EngineRunner
from .gpu import gpu_visible
from .logger import make_logger
from .marking import Parsed, graph_nodes, require_source
from .prepare import PRECISIONS
from .runtime import import_tensorrt


def run(params: Params, report: Report) -> CommandOutput:
    samples_arg, stacked, runs = batch_request(params, "trt.batch")
    params.finish()
    jobs = [_job(raw, index) for index, raw in enumerate(runs)]
    if not gpu_visible():
        raise UsageError(
            "trt.batch runs TensorRT engines, which needs an NVIDIA GPU, and none is visible "
            "here: run the container with the GPU passed through (docker --gpus all)"
        )
    trt = import_tensorrt()
    logger = make_logger(trt.module, report)
    cuda = Cuda()
    samples: list[Arrays] | None = None
    results: list[dict[str, Any]] = []
    try:
        for job in jobs:
            result: dict[str, Any] = {}
            parsed = None
            if job["graph"] or job["extra"]:
                source = require_source(job["source"], "the layer search (--layers)")
                parsed = Parsed(trt, source, job["build"]["precision"], report)
            try:
                start = time.perf_counter_ns()
                blob = Path(job["model"]).read_bytes()
                engine = EngineRunner(trt, logger, blob, Path(job["model"]).name)
                if parsed is not None and job["graph"]:
                    result["graph"] = graph_nodes(Path(job["source"]), set(parsed.tensors))
                if parsed is not None and job["extra"]:
                    build = job["build"]
                    marked = parsed.build_marked(
                        job["extra"], build.get("shapes"), build.get("input_shape")
                    )
                    probe = EngineRunner(trt, logger, marked, f"probe of {Path(job['model']).name}")
                    result["engine_layers"] = {
                        "engine": engine.num_layers,
                        "probe": probe.num_layers,
                    }
                    engine = probe
            finally:
                if parsed is not None:
                    parsed.close()
            loaded = time.perf_counter_ns() - start
            samples = dataset(samples, samples_arg, stacked, engine.specs)
            outputs, elapsed = engine.run_all(cuda, samples)
            save_npz(job["output"], outputs, compress=False)
            report.info(
                f"{Path(job['model']).name}: {len(samples)} samples run in {ms(elapsed):.1f} ms"
            )
            result.update(
                outputs=stacked_info(outputs), inference_ms=ms(elapsed), load_ms=ms(loaded)
            )
            results.append(result)
    finally:
        cuda.close()
    return batch_output(params, results, samples, "inference_ms", "load_ms")


def _job(raw: Any, index: int) -> dict[str, Any]:
    """One run's fields, checked before the GPU is touched."""
    job = Params(raw, f"trt.batch run {index}")
    model, output = job.path("model"), job.path("output")
    source = job.path("source", required=False)
    build = job.raw_value("build") or {}
    extra = job.string_list("extra_outputs") or []
    graph = job.boolean("graph", False)
    job.finish()
    require_engine_file(model)
    if not isinstance(build, dict) or build.get("precision", "fp32") not in PRECISIONS:
        raise UsageError(
            f"trt.batch run {index}: 'build' must be {{precision: one of "
            f"{', '.join(PRECISIONS)}, shapes, input_shape}}, got {build!r}"
        )
    build = {"precision": build.get("precision", "fp32"), **build}
    return {"model": model, "output": output, "source": source, "build": build,
            "extra": extra, "graph": graph}  # fmt: skip
