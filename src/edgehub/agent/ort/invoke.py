"""``ort.invoke``: run a model once and save its outputs (and the inputs it ran on).

Request::

    {"model": PATH, "output": NPZ,
     "input_data": null | NPZ (keyed by input name; a bare .npy for a one-input model),
     "input_shape": null | [ints] | {name: [ints]}, "seed": 0,
     "inputs_out": null | NPZ (where to save the inputs used), "providers": null | [names],
     "intra_op_threads": null | int, "inter_op_threads": null | int}

Given inputs are checked against the model (names, dtypes, shapes) before running; without
them the inputs are random (``seed``) at ``input_shape`` (:mod:`..inputs`). Outputs go to a
compressed .npz keyed by output name. Metrics: inference_ms, session_create_ms. Data: outputs
and inputs [{name, dtype, shape}], input_source ("npz" or "random"), shapes.
"""

from __future__ import annotations

import time
from typing import Any

from ..inputs import prepare_inputs, shapes_record
from ..models import resolve_model_path
from ..protocol import CommandOutput, Params, UsageError
from ..report import Report
from ..stats import ms
from ..tensors import array_info, save_npz
from .sessions import SessionSettings, create_session, input_specs, run_failures


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    input_arg = params.path("input_data", required=False)
    output_arg = params.path("output")
    inputs_out = params.path("inputs_out", required=False)
    raw_shape = params.raw_value("input_shape")
    seed = params.integer("seed", 0)
    settings = SessionSettings.read(params)
    params.finish()

    path = resolve_model_path(model_arg)
    options = settings.options()
    start = time.perf_counter_ns()
    session = create_session(path, options, settings.providers)
    created = time.perf_counter_ns() - start
    specs = input_specs(session, path if input_arg is None else None)
    samples = prepare_inputs(specs, input_arg, raw_shape, seed, report)
    if len(samples) != 1:
        raise UsageError(
            f"input_data '{input_arg}' holds {len(samples)} samples; invoke runs one: pass one .npz"
        )
    feeds = samples[0]
    names = [o.name for o in session.get_outputs()]
    start = time.perf_counter_ns()
    with run_failures():
        values = session.run(names, feeds)
    elapsed = time.perf_counter_ns() - start
    outputs: dict[str, Any] = dict(zip(names, values))
    save_npz(output_arg, outputs)
    if inputs_out is not None:
        save_npz(inputs_out, feeds)
    report.info(f"outputs written to {output_arg} ({ms(elapsed):.3f} ms)")
    params.resolved["shapes"] = shapes_record(samples)
    data = {
        "outputs": [array_info(name, outputs[name]) for name in names],
        "inputs": [array_info(name, array) for name, array in feeds.items()],
        "input_source": "npz" if input_arg else "random",
        "shapes": params.resolved["shapes"],
        "output_path": output_arg,
    }
    if inputs_out is not None:
        data["inputs_path"] = inputs_out
    metrics = {"inference_ms": ms(elapsed), "session_create_ms": ms(created)}
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)
