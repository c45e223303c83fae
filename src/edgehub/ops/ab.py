"""Interleaved A/B: two models compared on one device in one agent process (`hub exec ab`).

Both models are loaded once into the same agent (the runtime's warm container, or an SSH
device's resident agent) and timed in alternating short blocks, A B or B A per round as drawn
from a recorded seed, so that the machine's drift hits both alike. The verdict comes from the
per-round ratios B/A (`tracking.paired`): a bootstrap CI of the median ratio, an exact sign
test and a minimum effect. Recorded as an ``AB`` run (params: models, seed, rounds; metrics:
the ratio and its CI; artifact ``ab.json`` with every round) with two ``PROFILE`` child runs
(``parent_run_id``: the ``AB`` run), one per model, whose ``profile.json`` holds that model's
samples as a profile run's does; `hub runs compare` of the two children uses the rounds' pairing
(`paired_from_parent`). Any runtime whose descriptor declares an ``ab`` runs it, on the
models its ``model_file`` rule accepts (its ``host_gpu`` ones on this host's GPU), with the
``--input`` arrays where it takes them (``ab_inputs``); devices where one process cannot hold
both models are refused.

On a Qualcomm AI Hub device the service runs one profile job per model (`ops.ab_hub`): not
interleaved, so the verdict compares the two jobs' per-iteration times as independent samples
(``method`` "unpaired": Mann-Whitney U and a bootstrap CI of the median difference).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import ModelError, UsageError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.reports import log_json
from edgehub.tracking.paired import MIN_EFFECT, PairedVerdict

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor
    from edgehub.ops.project import Project, Subscriber
    from edgehub.toolchains.agent_call import AgentResult
    from edgehub.tracking.profile_compare import ProfileComparison
    from edgehub.tracking.records import RunRecord
    from edgehub.tracking.run_log import RunLog


AB_RUN = "AB"
INTERLEAVED = "interleaved"
UNPAIRED = "unpaired"
SETTINGS = ("input_shape", "burn_ins", "block_ms", "seed", "min_effect")
DEFAULT_ROUNDS = 30
DEFAULT_BLOCK_MS = 40
DEFAULT_WARMUP = 10
# the agent's params that the comparison run records in its own words already
_OWN_PARAMS = frozenset(
    {"model_a", "model_b", "rounds", "seed", "block_ms", "profile_json_a", "profile_json_b"}
)


@dataclass
class AbRequest:
    """Compare ``model_b`` against ``model_a`` with ``runtime`` on ``device``.

    ``settings`` (``--set``): ``input_shape``, ``burn_ins`` (warm-up runs per session),
    ``block_ms`` (the length of a block), ``seed`` (the order of the blocks; default: drawn and
    recorded), ``min_effect`` (a fraction, default `MIN_EFFECT`). ``max_regression`` (a fraction)
    asks for a regression verdict; ``inputs`` is an .npz fed to both models. ``timeout``
    (seconds) stops the whole comparison that long after the device is held: its commands
    are stopped, its runs end FAILED with a `CommandTimeout`, the lease is let go.
    """

    runtime: str
    model_a: Path
    model_b: Path
    device: str | None = None
    rounds: int | None = None  # None: DEFAULT_ROUNDS (refused on AI Hub, which has no rounds)
    settings: dict[str, str] = field(default_factory=dict)
    inputs: Path | None = None
    max_regression: float | None = None
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    lease_timeout: float | None = None
    timeout: float | None = None  # seconds, once the device is held: FAILED, as `hub exec`


@dataclass
class AbReport:
    """The comparison run, its two profile runs, and the verdict: paired rounds
    (``method`` "interleaved"), or two independent samples (``method`` "unpaired", AI Hub's
    one job per model; ``rounds`` empty, ``jobs`` the job per side)."""

    run_id: str
    run_a: str
    run_b: str
    device: str
    seed: int
    verdict: PairedVerdict | ProfileComparison
    median_a_ms: float
    median_b_ms: float
    runs_per_block: dict[str, int]
    rounds: list[dict[str, Any]]
    method: str = INTERLEAVED
    jobs: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def regressed(self) -> bool:
        return self.verdict.regressed

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["verdict"] = self.verdict.to_dict()
        if not self.jobs:
            del data["jobs"]
        return data


@dataclass
class _Settings:
    input_shape: Any = None
    warmup: int = DEFAULT_WARMUP
    block_ms: int = DEFAULT_BLOCK_MS
    seed: int | None = None
    min_effect: float | None = None  # None: each verdict's own floor
    given: tuple[str, ...] = ()


def _integer(key: str, raw: str, minimum: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise UsageError(f"{{field}} {key}={raw}: give a whole number", field="settings") from None
    if value < minimum:
        raise UsageError(f"{{field}} {key}={raw}: must be at least {minimum}", field="settings")
    return value


def _parse_settings(pairs: dict[str, str], profiler: type[Any]) -> _Settings:
    from edgehub.ops.options import parse_value

    settings = _Settings(given=tuple(pairs))
    for key, raw in pairs.items():
        if key == "input_shape":
            settings.input_shape = parse_value(profiler, "input_shape", raw)
        elif key == "burn_ins":
            settings.warmup = _integer(key, raw, 0)
        elif key == "block_ms":
            settings.block_ms = _integer(key, raw, 5)  # shorter blocks measure the switch
        elif key == "seed":
            settings.seed = _integer(key, raw, 0)
        elif key == "min_effect":
            text = raw.strip()
            try:
                value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
            except ValueError:
                raise UsageError(
                    f"{{field}} min_effect={raw}: give a percentage such as 2%", field="settings"
                ) from None
            if not 0 <= value < 1:
                raise UsageError(
                    f"{{field}} min_effect={raw}: give a percentage below 100%", field="settings"
                )
            settings.min_effect = value
        else:
            raise UsageError(
                f"{{field}} {key}: not an option of the A/B (options: {', '.join(SETTINGS)})",
                field="settings",
            )
    return settings


def _check(request: AbRequest, runtime: RuntimeDescriptor) -> None:
    if runtime.ab is None:
        raise UsageError(
            f"hub exec ab does not run {request.runtime!r} models (the runtime declares no "
            "A/B); profile each model and use hub runs compare"
        )
    for model in (request.model_a, request.model_b):
        if not model.is_file():
            what = "is a directory, not a model file" if model.is_dir() else "not found"
            raise ModelError(f"model {model} {what}; check the path")
        problem = runtime.model_file(model) if runtime.model_file is not None else None
        if problem is not None:
            raise ModelError(problem)
    if request.inputs is not None and not runtime.ab_inputs:
        raise UsageError(
            f"{{field}} does not apply to an A/B on {request.runtime}: {request.runtime} uses "
            "random inputs in an A/B; drop {field}",
            field="inputs",
        )
    if request.inputs is not None and not request.inputs.is_file():
        raise UsageError(f"input file {request.inputs} not found; pass an existing .npz")
    if request.rounds is not None and request.rounds < 6:
        raise UsageError(
            f"{{field}} {request.rounds} is too few; give at least 6 (default 30)", field="rounds"
        )
    if request.rounds is not None and request.rounds > 10000:
        raise UsageError(
            f"{{field}} {request.rounds} is too many; give at most 10000", field="rounds"
        )


def run_ab(
    project: Project,
    request: AbRequest,
    *,
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
) -> AbReport:
    """Run the comparison; every run it starts is recorded in the project's store."""
    from edgehub.core.component.dispatch import resolve_device
    from edgehub.core.runtimes import get_runtime
    from edgehub.ops.execute import _deadline, held_device

    runtime = get_runtime(request.runtime)
    _check(request, runtime)
    settings = _parse_settings(request.settings, runtime.profiler)
    seed = settings.seed if settings.seed is not None else secrets.randbelow(2**31)
    if runtime.host_gpu:
        from edgehub.toolchains.host_gpu import require_host_gpu

        require_host_gpu(
            f"hub exec ab {runtime.name} runs both models",
            "Run it on a host with a GPU, or profile each model on a GPU device and use hub "
            "runs compare",
        )
    cancel = cancel or Cancellation()
    with project.context(subscriber, tags=request.tags) as ctx, cancel.bound(ctx):
        device = resolve_device(runtime.profiler, ctx, request.device)
        declared = device.provider_declaration
        if declared is not None and declared.unpaired_ab:
            from edgehub.ops.ab_hub import recorded_on_hub

            _check_hub(request, settings)
            with _deadline(ctx, cancel, request.timeout):
                return recorded_on_hub(ctx, request, settings.min_effect, seed, device.name)
        command = f"hub exec profile {request.runtime} {request.model_a}"  # as a profile's lease
        with (
            held_device(
                project, ctx, device, measuring=True, command=command, cancel=cancel,
                timeout=request.lease_timeout, probe=True,
            ),
            _deadline(ctx, cancel, request.timeout),
        ):  # fmt: skip
            return _recorded(ctx, request, settings, seed, device.name, runtime)


def _check_hub(request: AbRequest, settings: _Settings) -> None:
    """What does not apply to AI Hub's one profile job per model."""
    if request.rounds is not None:
        raise UsageError(
            "{field} does not apply on Qualcomm AI Hub: it runs one profile job per model "
            "(not interleaved); leave {field} out",
            field="rounds",
        )
    if request.inputs is not None:
        raise UsageError(
            "{field} does not apply on Qualcomm AI Hub: its profile jobs use random inputs",
            field="inputs",
        )
    extra = [k for k in settings.given if k not in ("seed", "min_effect")]
    if extra:
        raise UsageError(
            f"{{field}} {extra[0]} does not apply on Qualcomm AI Hub (one profile job per model); "
            "there only seed and min_effect apply",
            field="settings",
        )


def _recorded(
    ctx: HubContext,
    request: AbRequest,
    settings: _Settings,
    seed: int,
    device: str,
    runtime: RuntimeDescriptor,
) -> AbReport:
    from edgehub.toolchains.ab_agent import check_rounds
    from edgehub.toolchains.local_session import record_agent_result
    from edgehub.tracking.paired import paired_verdict

    a, b = request.model_a.resolve(), request.model_b.resolve()
    rounds_asked = DEFAULT_ROUNDS if request.rounds is None else request.rounds
    min_effect = MIN_EFFECT if settings.min_effect is None else settings.min_effect
    with ab_run(
        ctx, request, device, rounds=rounds_asked, seed=seed, block_ms=settings.block_ms,
        burn_ins=settings.warmup, min_effect=min_effect,
    ) as parent:  # fmt: skip
        ctx.events.info(f"A/B on {device}: {rounds_asked} rounds, order seed {seed}")
        assert runtime.ab is not None  # `_check`
        result = runtime.ab(
            ctx,
            runtime,
            a,
            b,
            device=device,
            rounds=rounds_asked,
            block_ms=settings.block_ms,
            warmup=settings.warmup,
            seed=seed,
            input_data=request.inputs.resolve() if request.inputs else None,
            input_shape=_shape(settings.input_shape),
        )
        check_rounds(result, device)  # whichever runtime made them
        record_agent_result(ctx, result, skip=_OWN_PARAMS)
        rounds = list(result.data["rounds"])
        verdict = paired_verdict(
            [float(r["ratio"]) for r in rounds],
            min_effect=min_effect,
            max_regression=request.max_regression,
            seed=seed,
        )
        children = {
            side: _child(ctx, parent, side, model, result, request.runtime, runtime.profiler)
            for side, model in (("a", a), ("b", b))
        }
        ctx.client.log_params({"run_a": children["a"], "run_b": children["b"]})
        report = AbReport(
            run_id=parent.run_id,
            run_a=children["a"],
            run_b=children["b"],
            device=device,
            seed=seed,
            verdict=verdict,
            median_a_ms=float(result.metrics["a_latency_median_ms"]),
            median_b_ms=float(result.metrics["b_latency_median_ms"]),
            runs_per_block={k: int(v) for k, v in result.data["runs_per_block"].items()},
            rounds=rounds,
        )
        ratios = {
            "ratio_median": verdict.median_ratio,
            "ratio_ci_low": verdict.ci[0],
            "ratio_ci_high": verdict.ci[1],
            "sign_p": verdict.sign_p,
        }
        return record_report(ctx, report, ratios)


@contextmanager
def ab_run(ctx: HubContext, request: AbRequest, device: str, **params: Any) -> Iterator[RunLog]:
    """The comparison's ``AB`` run on ``device``, with its params: the runtime, both models,
    ``params`` and the regression asked for."""
    a, b = request.model_a.resolve(), request.model_b.resolve()
    name = request.name or f"ab {a.name} vs {b.name}"
    with ctx.open_run(AB_RUN, name, devices=[ctx.device(device)]) as run:
        ctx.client.log_params({"$runtime": request.runtime, "model_a": str(a), "model_b": str(b)})
        ctx.client.log_params(params)
        if request.max_regression is not None:
            ctx.client.log_param("max_regression", request.max_regression)
        yield run


@contextmanager
def child_run(
    ctx: HubContext,
    parent: RunLog,
    side: str,
    model: Path,
    runtime: str,
    profiler: type[Any],
    **params: Any,
) -> Iterator[str]:
    """One model's ``PROFILE`` run under the comparison ``parent``, with its params (``params``
    too) and the model as its input; yields its id."""
    label = side.upper()
    with ctx.open_run(
        "PROFILE",
        f"ab {label}: {model.name}",
        component=profiler.__name__,
        parent_run_id=parent.run_id,
        devices=[ctx.device(name) for name in parent.devices],  # the comparison's
    ) as run:
        ctx.client.log_params(
            {"$runtime": runtime, "ab.side": label, "ab.run": parent.run_id, **params}
        )
        ctx.client.log_artifact(model, name="input")
        yield run.run_id


def record_report(ctx: HubContext, report: AbReport, metrics: dict[str, float]) -> AbReport:
    """Record ``report`` on the comparison run: ``metrics`` and the verdict's, and ``ab.json``."""
    verdict = report.verdict
    outcome = {"significant": float(verdict.significant), "regressed": float(verdict.regressed)}
    ctx.client.log_metrics({**metrics, **outcome})
    ctx.events.info(
        verdict.verdict + ("" if report.method == INTERLEAVED else f" [{report.method}]")
    )
    log_json(ctx, "ab.json", report.to_dict(), name="ab", indent=1)
    return report


def _shape(value: Any) -> Any:
    if value is None or isinstance(value, dict):
        return None if value is None else {k: list(v) for k, v in value.items()}
    return [int(d) for d in value]


def _child(
    ctx: HubContext,
    parent: RunLog,
    side: str,
    model: Path,
    result: AgentResult,
    runtime: str,
    profiler: type[Any],
) -> str:
    """One model's PROFILE run under the comparison, with its samples and statistics."""
    prefix = f"{side}_"
    metrics = {
        k[len(prefix) :]: float(v)
        for k, v in result.metrics.items()
        if k.startswith(prefix) and isinstance(v, (int, float))
    }
    with child_run(ctx, parent, side, model, runtime, profiler) as run_id:
        conditions = result.data.get("conditions")
        if isinstance(conditions, dict):  # the rounds of both models ran under these
            ctx.client.log_environment({f"conditions.{k}": v for k, v in conditions.items()})
        ctx.client.log_metrics(metrics)
        ctx.client.log_metric("$latency", metrics["latency_median_ms"])
        if "session_create_ms" in metrics:
            ctx.client.log_metric("$load_time", metrics["session_create_ms"])
        ctx.client.log_artifact(result.files / f"profile_{side}.json", name="output_file")
        return run_id


def paired_from_parent(
    parent: RunRecord,
    a: RunRecord,
    b: RunRecord,
    *,
    max_regression: float | None = None,
    min_effect: float | None = None,
) -> PairedVerdict | None:
    """The paired verdict for two PROFILE children of one ``AB`` run (`hub runs compare` of
    them), from the rounds the comparison recorded; B/A as asked, also when given as B A.
    None when ``parent`` is no A/B run of these two."""
    from edgehub.tracking.paired import paired_verdict
    from edgehub.tracking.verdict_numbers import checked_numbers

    if parent.run_type != AB_RUN or parent.params.get("method") == UNPAIRED:
        return None
    pair = (parent.params.get("run_a"), parent.params.get("run_b"))
    if (a.run_id, b.run_id) not in (pair, pair[::-1]):
        return None
    stored = [x for x in parent.all_artifacts if x.name == "ab" and x.is_stored]
    try:
        rounds = json.loads(stored[0].local().read_text(encoding="utf-8"))["rounds"]
        found = [r["ratio"] for r in rounds]
    except (IndexError, OSError, ValueError, KeyError, TypeError):
        return None
    whose = f"A/B run {parent.run_id[:8]}"
    ratios = [float(r) for r in checked_numbers(found, "round ratios B/A", whose=whose)]
    if (a.run_id, b.run_id) != pair:
        ratios = [1.0 / r for r in ratios]
    seed = parent.params.get("seed")
    return paired_verdict(
        ratios,
        min_effect=MIN_EFFECT if min_effect is None else min_effect,
        max_regression=max_regression,
        seed=seed if isinstance(seed, int) else 0,
    )
