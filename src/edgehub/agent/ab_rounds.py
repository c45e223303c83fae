"""The runtime-independent part of an interleaved A/B (``ort.ab``, ``tflite.ab``, ``trt.ab``).

A runtime reads `read_request`, creates its sessions with `session_sets`, warms them with
`warm_up`, and gives `measure_rounds` a ``block(side, index, runs, start_at)`` that runs one
block of model ``side`` ("a" or "b") in session set ``index`` (0 or 1): ``SWITCH_IN`` untimed
runs, then ``runs`` timed ones (ns), inputs cycling from ``start_at``; `ab_output` makes the
result. Standard library only.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from statistics import median
from typing import Any, Callable, List, TypeVar

from .conditions import ConditionsProbe, conditions_lines
from .env import collect_env
from .protocol import CommandOutput, Params, RuntimeFailure, write_json_atomic
from .report import Report
from .stable import timed_runs
from .stats import latency_stats, ms

MIN_BLOCK_RUNS = 3
MAX_BLOCK_RUNS = 100000
SWITCH_IN = 2
CALIBRATION_RUNS = 5
SIDES = ("a", "b")

Block = Callable[[str, int, int, int], List[int]]
Session = TypeVar("Session")


@dataclass
class AbRequest:
    """The request keys every runtime's A/B reads (``model_a``, ``model_b``, ``rounds``,
    ``block_ms``, ``warmup``, ``seed``, ``input_seed``, ``profile_json_a``/``_b``)."""

    paths: dict[str, str]
    rounds: int
    block_ms: int
    warmup: int
    seed: int
    input_seed: int
    json_paths: dict[str, str | None]


def read_request(params: Params) -> AbRequest:
    """The shared keys of ``params``; the runtime reads its own, then calls ``params.finish``."""
    paths = {side: str(params.path(f"model_{side}")) for side in SIDES}
    return AbRequest(
        paths=paths,
        rounds=params.integer("rounds", 30, minimum=2),
        block_ms=params.integer("block_ms", 40, minimum=1),
        warmup=params.integer("warmup", 10, minimum=0),
        seed=params.integer("seed", 0),
        input_seed=params.integer("input_seed", 0),
        json_paths={side: params.path(f"profile_json_{side}", required=False) for side in SIDES},
    )


def session_sets(
    create: Callable[[str], Session],
) -> tuple[list[dict[str, Session]], dict[str, float]]:
    """Two sets of one session per model: set 0 creates A then B, set 1 B then A (rounds
    alternate between them, so a bias from being created second hits A and B alike); and each
    model's mean creation time (ms)."""
    sets: list[dict[str, Session]] = [{}, {}]
    took: dict[str, list[float]] = {"a": [], "b": []}
    for index, creation in enumerate((SIDES, SIDES[::-1])):
        for side in creation:
            begin = time.perf_counter_ns()
            sets[index][side] = create(side)
            took[side].append(ms(time.perf_counter_ns() - begin))
    return sets, {side: sum(took[side]) / 2.0 for side in SIDES}


def warm_up(warmup: int, run_once: Callable[[str, int, int], None]) -> None:
    """``warmup`` untimed runs of every session, interleaved: ``run_once(side, index, i)``."""
    for i in range(warmup):
        for index in (0, 1):
            for side in SIDES if (i + index) % 2 == 0 else SIDES[::-1]:
                run_once(side, index, i)


def timed_block(call: Callable[[], object], runs: int) -> list[int]:
    """One block: ``SWITCH_IN`` untimed calls of ``call``, then ``runs`` timed ones (ns)."""
    for _ in range(SWITCH_IN):
        call()
    return timed_runs(call, runs)


@dataclass
class Rounds:
    """Each round's row, each model's timed samples (ns), the runs per block, the conditions."""

    rows: list[dict[str, Any]]
    samples: dict[str, list[int]]
    per_block: dict[str, int]
    conditions: dict[str, Any]


def measure_rounds(block: Block, rounds: int, block_ms: int, seed: int, report: Report) -> Rounds:
    """Calibrate the runs per block (about ``block_ms`` each), then run ``rounds`` rounds of one
    block of each model, AB or BA as drawn from ``seed``; a round's ratio is B/A of the block
    medians."""
    per_block: dict[str, int] = {}
    for side in SIDES:
        typical_ms = max(ms(median(block(side, 0, CALIBRATION_RUNS, 0))), 1e-6)
        wanted = math.ceil(block_ms / typical_ms)
        per_block[side] = max(MIN_BLOCK_RUNS, min(MAX_BLOCK_RUNS, wanted))
    report.info(
        f"{rounds} rounds; runs per block: A {per_block['a']}, B {per_block['b']} "
        f"(about {block_ms} ms each), order seed {seed}"
    )
    rng = random.Random(seed)
    samples: dict[str, list[int]] = {"a": [], "b": []}
    rows: list[dict[str, Any]] = []
    probe = ConditionsProbe()
    for number in range(rounds):
        order = "ab" if rng.random() < 0.5 else "ba"
        index = number % 2
        block_median: dict[str, float] = {}
        for side in order:
            timed = block(side, index, per_block[side], len(samples[side]))
            samples[side].extend(timed)
            block_median[side] = median(timed)
        if block_median["a"] <= 0:
            raise RuntimeFailure("a block of model A measured 0 ms: the clock is too coarse here")
        a_ms, b_ms = (round(block_median[side] / 1e6, 6) for side in SIDES)
        ratio = round(block_median["b"] / block_median["a"], 6)
        rows.append(
            {"order": order.upper(), "set": index, "a_ms": a_ms, "b_ms": b_ms, "ratio": ratio}
        )
    conditions = probe.finish()
    for line in conditions_lines(conditions):
        report.info(line)
    return Rounds(rows, samples, per_block, conditions)


def ab_output(
    found: Rounds,
    resolved: dict[str, Any],
    load_ms: dict[str, float],
    models: dict[str, str],
    json_paths: dict[str, str | None],
    seed: int,
) -> CommandOutput:
    """The command's result: metrics ``a_*``/``b_*`` (each model's latency statistics, its
    ``session_create_ms`` the mean load time), ``data.rounds``, and a profile-shaped document
    per model at ``json_paths`` (``samples_us``, ``stats``, ``env``, ``settings``,
    ``conditions``)."""
    metrics: dict[str, Any] = {"rounds": len(found.rows), "seed": seed}
    stats: dict[str, dict[str, float]] = {}
    for side in SIDES:
        stats[side] = latency_stats(found.samples[side])
        stats[side]["session_create_ms"] = round(load_ms[side], 3)
        stats[side]["runs"] = len(found.samples[side])
        for key, value in stats[side].items():
            metrics[f"{side}_{key}"] = value
    settings = dict(resolved, runs_per_block=found.per_block, switch_in_runs=SWITCH_IN)
    env = collect_env()
    data: dict[str, Any] = {
        "rounds": found.rows,
        "runs_per_block": found.per_block,
        "seed": seed,
        "conditions": found.conditions,
    }
    for side in SIDES:
        target = json_paths[side]
        if target:
            document = {
                "samples_us": [round(s / 1000.0, 3) for s in found.samples[side]],
                "stats": stats[side],
                "env": env,
                "settings": dict(settings, model_path=models[side], side=side.upper()),
                "conditions": found.conditions,
            }
            write_json_atomic(target, document)
            data[f"profile_json_{side}"] = target
    return CommandOutput(params=resolved, metrics=metrics, data=data)
