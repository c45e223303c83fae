"""``tflite.ab``: two ``.tflite`` models in one process, timed in alternating short blocks.

Request::

    {"model_a": PATH, "model_b": PATH, "rounds": 30, "block_ms": 40, "warmup": 10, "seed": 0,
     "input_seed": 0, "input_shape": null | [ints] | {name: [ints]}, "threads": null | int,
     "xnnpack": true, "profile_json_a": null | PATH, "profile_json_b": null | PATH}

As ``ort.ab`` (:mod:`..ab_rounds`), with interpreters where it has sessions. Inputs are random
in each model's own TFLite names and dtypes (``input_seed``; ``input_shape`` for dynamic dims).
"""

from __future__ import annotations

from ..ab_rounds import (
    SIDES,
    ab_output,
    measure_rounds,
    read_request,
    session_sets,
    timed_block,
    warm_up,
)
from ..protocol import CommandOutput, Params
from ..report import Report
from .edges import ModelEdges
from .interpreter import load_interpreter, resolve_tflite_path
from .profile import model_feeds


def run(params: Params, report: Report) -> CommandOutput:
    request = read_request(params)
    threads = params.integer("threads", None, minimum=1)
    xnnpack = params.boolean("xnnpack", True)
    raw_shape = params.raw_value("input_shape")
    params.finish()
    models = {side: resolve_tflite_path(request.paths[side], "hub exec ab") for side in SIDES}

    sets, load_ms = session_sets(
        lambda side: ModelEdges(
            load_interpreter(models[side], threads=threads, xnnpack=xnnpack), None
        )
    )
    feeds = {
        side: model_feeds(sets[0][side], None, True, request.input_seed, raw_shape, report)
        for side in SIDES
    }
    report.info(f"warmup: {request.warmup} runs of each of 2 interpreters per model")

    def once(side: str, index: int, i: int) -> None:
        sets[index][side].set_inputs(feeds[side])
        sets[index][side].invoke()

    warm_up(request.warmup, once)

    def block(side: str, index: int, runs: int, start_at: int) -> list[int]:
        sets[index][side].set_inputs(feeds[side])
        return timed_block(sets[index][side].interpreter.invoke, runs)

    found = measure_rounds(block, request.rounds, request.block_ms, request.seed, report)
    sets = []
    names = {side: str(models[side]) for side in SIDES}
    return ab_output(found, params.resolved, load_ms, names, request.json_paths, request.seed)
