"""``ort.invoke``: run a model once on given inputs and save its outputs.

Request::

    {"model": PATH, "input": NPZ (keyed by input name; a bare .npy for a one-input model),
     "output": NPZ, "providers": null | [names],
     "intra_op_threads": null | int, "inter_op_threads": null | int}

Inputs are loaded with ``allow_pickle=False`` and checked against the model (names, dtypes,
shapes with dynamic dims) before running; a mismatch is an InputDataError listing every expected
``name: dtype[shape]``. Outputs go to a compressed .npz keyed by output name.
Metrics: inference_ms, session_create_ms. Data: outputs [{name, dtype, shape}], inputs (same).
"""

from __future__ import annotations

import time
from typing import Any

from ..models import resolve_model_path
from ..protocol import CommandOutput, Params, RuntimeFailure, one_line
from ..report import Report
from ..stats import ms
from ..tensors import array_info, load_inputs, save_npz
from .sessions import create_session, input_specs, resolve_providers, session_options


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    input_arg = params.path("input")
    output_arg = params.path("output")
    providers = resolve_providers(params.string_list("providers"))
    params.resolved["providers"] = providers
    intra = params.integer("intra_op_threads", None, minimum=0)
    inter = params.integer("inter_op_threads", None, minimum=0)
    params.finish()
    assert model_arg is not None and input_arg is not None and output_arg is not None

    path = resolve_model_path(model_arg)
    options = session_options(intra_op_threads=intra, inter_op_threads=inter)
    start = time.perf_counter_ns()
    session = create_session(path, options, providers)
    created = time.perf_counter_ns() - start
    feeds = load_inputs(input_arg, input_specs(session))
    report.info(
        "invoke: "
        + ", ".join(f"{k}: {v.dtype.name}[{','.join(map(str, v.shape))}]" for k, v in feeds.items())
    )
    names = [o.name for o in session.get_outputs()]
    start = time.perf_counter_ns()
    try:
        values = session.run(names, feeds)
    except Exception as exc:
        raise RuntimeFailure(f"onnxruntime failed running the model: {one_line(str(exc))}") from exc
    elapsed = time.perf_counter_ns() - start
    outputs: dict[str, Any] = dict(zip(names, values))
    save_npz(output_arg, outputs)
    report.info(f"outputs written to {output_arg} ({ms(elapsed):.3f} ms)")
    data = {
        "outputs": [array_info(name, outputs[name]) for name in names],
        "inputs": [array_info(name, array) for name, array in feeds.items()],
        "output_path": output_arg,
    }
    metrics = {"inference_ms": ms(elapsed), "session_create_ms": ms(created)}
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)
