"""``ort.ab``: two models measured in one process, in alternating short blocks (interleaved A/B).

Request::

    {"model_a": PATH, "model_b": PATH, "rounds": 30, "block_ms": 40, "warmup": 10, "seed": 0,
     "input_seed": 0, "input_data": null | NPZ | DIR, "input_shape": null | [ints] | {name: [ints]},
     "intra_op_threads": null | int, "inter_op_threads": null | int, "providers": null | [names],
     "graph_optimization_level": "all", "profile_json_a": null | PATH, "profile_json_b": ...}

Random inputs come from ``input_seed``; the blocks' order from ``seed`` (:mod:`..ab_rounds`):

1. Two sets of sessions, set 0 created A then B, set 1 B then A; rounds alternate between them,
   so a bias from being created (or placed in memory) second hits A and B alike.
2. Every session runs ``warmup`` untimed runs, interleaved.
3. A few timed runs of each model give its runs per block (about ``block_ms``, at least
   ``MIN_BLOCK_RUNS``).
4. Each round runs a block of A and one of B in a drawn order (AB or BA); a block starts with
   ``SWITCH_IN`` untimed runs, and its value is the median of its samples.

Result: ``data.rounds`` (order, session set, each block's median in ms, ratio B/A),
``data.runs_per_block``, metrics ``a_*``/``b_*`` (latency statistics of each model's samples),
``data.conditions`` (:mod:`..conditions`); ``profile_json_a``/``_b`` get ``ort.profile``-shaped
documents (``samples_us``, ``stats``, ``env``, ``settings``, ``conditions``).
"""

from __future__ import annotations

from .. import ab_rounds
from ..inputs import prepare_inputs, shapes_record
from ..models import resolve_model_path
from ..protocol import CommandOutput, Params
from ..report import Report
from ..tensors import Arrays
from .profile import timed_runs
from .sessions import SessionSettings, input_specs, run_failures, run_once


def run(params: Params, report: Report) -> CommandOutput:
    request = ab_rounds.read_request(params)
    input_data = params.path("input_data", required=False)
    settings = SessionSettings.read(params, optimization_level=True)
    raw_shape = params.raw_value("input_shape")
    params.finish()
    models = {side: resolve_model_path(request.paths[side]) for side in ab_rounds.SIDES}
    # 1. two session sets, created in opposite orders
    sessions, load_ms = ab_rounds.session_sets(lambda side: settings.create(models[side]))
    inputs: dict[str, list[Arrays]] = {}
    for side in ab_rounds.SIDES:
        specs = input_specs(sessions[0][side], models[side] if input_data is None else None)
        inputs[side] = prepare_inputs(specs, input_data, raw_shape, request.input_seed, report)

    # 2. the same warm-up for every session, interleaved
    report.info(f"warmup: {request.warmup} runs of each of 2 sessions per model")
    ab_rounds.warm_up(
        request.warmup,
        lambda side, index, i: run_once(sessions[index][side], inputs[side][i % len(inputs[side])]),
    )

    # 3.-4. calibration and the rounds (:mod:`..ab_rounds`)
    def block(side: str, index: int, runs: int, start_at: int) -> list[int]:
        session, feeds = sessions[index][side], inputs[side]
        for i in range(ab_rounds.SWITCH_IN):  # untimed, then the timed runs, inputs cycling
            run_once(session, feeds[(start_at + i) % len(feeds)])
        with run_failures():
            return timed_runs(session, feeds, runs, start_at)

    found = ab_rounds.measure_rounds(block, request.rounds, request.block_ms, request.seed, report)
    sessions = []
    params.resolved["shapes_a"] = shapes_record(inputs["a"])
    params.resolved["shapes_b"] = shapes_record(inputs["b"])
    names = {side: str(models[side]) for side in ab_rounds.SIDES}
    return ab_rounds.ab_output(
        found, params.resolved, load_ms, names, request.json_paths, request.seed
    )
