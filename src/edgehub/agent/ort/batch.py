"""``ort.batch``: run models over every sample of a dataset in one call.

Request::

    {"samples": NPZ | DIR, "stacked": false,
     "runs": [{"model": PATH, "output": NPZ, "extra_outputs": [tensor names], "graph": false}],
     "providers": null | [names], "intra_op_threads": null | int, "inter_op_threads": null | int}

``samples``: a directory of ``.npz`` files (one sample each, read in name order), or with
``stacked`` one ``.npz`` whose arrays carry a leading samples axis; read once, checked against
each model. Each run's outputs go to an uncompressed ``.npz`` stacked along a new leading axis
(outputs whose shape varies across samples are refused). ``extra_outputs`` names intermediate
tensors to save too (graph outputs of a copy of the model); ``graph`` reports the model's
nodes. Metrics: inference_ms, session_create_ms (totals). Data: samples, runs [{outputs [{name,
dtype, shape}], inference_ms, session_create_ms, graph ([{name, op, inputs, outputs}])}].
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..inputs import OutputStack, batch_output, batch_request, dataset, stacked_info
from ..models import graph_nodes, with_graph_outputs
from ..protocol import CommandOutput, Params, RuntimeFailure, UsageError, one_line
from ..report import Report
from ..stats import ms
from ..tensors import Arrays, save_npz
from .sessions import SessionSettings, create_session, input_specs


def run(params: Params, report: Report) -> CommandOutput:
    samples_arg, stacked, runs = batch_request(params, "ort.batch")
    settings = SessionSettings.read(params)
    params.finish()
    options = settings.options()
    samples: list[Arrays] | None = None
    results: list[dict[str, Any]] = []
    for index, raw in enumerate(runs):
        job = Params(raw, f"ort.batch run {index}")
        model_arg, output_arg = job.path("model"), job.path("output")
        extra = job.string_list("extra_outputs") or []
        graph = job.boolean("graph", False)
        job.finish()
        path = Path(model_arg)
        nodes = graph_nodes(path) if graph or extra else []
        if extra:
            path = _with_outputs(path, extra, nodes)
        start = time.perf_counter_ns()
        session = create_session(path, options, settings.providers)
        created = time.perf_counter_ns() - start
        specs = input_specs(session)
        start = time.perf_counter_ns()
        samples = dataset(samples, samples_arg, stacked, specs)
        read = time.perf_counter_ns() - start
        outputs, elapsed = _run_all(session, samples)
        start = time.perf_counter_ns()
        save_npz(output_arg, outputs, compress=False)
        written = time.perf_counter_ns() - start
        report.info(
            f"{path.name}: {len(samples)} samples run in {ms(elapsed):.1f} ms (session "
            f"{ms(created):.1f} ms, samples read {ms(read):.1f} ms, outputs written "
            f"{ms(written):.1f} ms)"
        )
        result: dict[str, Any] = {
            "outputs": stacked_info(outputs),
            "inference_ms": ms(elapsed),
            "session_create_ms": ms(created),
        }
        if graph:
            result["graph"] = nodes
        results.append(result)
    return batch_output(params, results, samples, "inference_ms", "session_create_ms")


def _run_all(session: Any, samples: list[Arrays]) -> tuple[dict[str, Any], int]:
    """Each output stacked over the samples, and the nanoseconds spent in ``session.run``."""
    names = [o.name for o in session.get_outputs()]
    stack = OutputStack(len(samples))
    elapsed = 0
    for index, feeds in enumerate(samples):
        start = time.perf_counter_ns()
        try:
            values = session.run(names, feeds)
        except Exception as exc:
            raise RuntimeFailure(
                f"onnxruntime failed on sample #{index}: {one_line(str(exc))}"
            ) from exc
        elapsed += time.perf_counter_ns() - start
        for name, value in zip(names, values):
            stack.add(index, name, value)
    return stack.stacked, elapsed


def _with_outputs(path: Path, names: list[str], nodes: list[dict[str, Any]]) -> Path:
    """A copy of the model (beside it) whose graph outputs include the tensors ``names``."""
    made = {n for node in nodes for n in node["outputs"]}
    unknown = [n for n in names if n not in made]
    if unknown:
        raise UsageError(
            f"extra_outputs {', '.join(repr(n) for n in unknown)} are not produced by any node "
            f"of '{path.name}'"
        )
    return with_graph_outputs(path, names)
