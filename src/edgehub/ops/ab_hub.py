"""`hub exec ab` on a Qualcomm AI Hub device: one profile job per model, not interleaved.

Both jobs are submitted, then both waited for (`toolchains.qai_hub.ab`). Each job ran in its own
device session, so the verdict compares the two jobs' per-iteration inference times as
independent samples (`UNPAIRED_TEST`: Mann-Whitney U and a bootstrap CI of the difference of
the medians, `tracking.profile_compare`), with that comparison's 5 % floor unless ``min_effect``
is set. Recorded like the interleaved A/B: an ``AB`` run (``method`` "unpaired", both job ids)
with one ``PROFILE`` child per model holding its job, samples and statistics.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.ops.ab import AbReport, AbRequest
    from edgehub.toolchains.qai_hub.ab import HubProfile
    from edgehub.tracking.run_log import RunLog


NOT_INTERLEAVED = "AI Hub: one profile job per model; not interleaved"
UNPAIRED_TEST = (
    "unpaired: Mann-Whitney U test and bootstrap 95 % CI of the median difference of the two "
    "jobs' per-iteration times"
)


def recorded_on_hub(
    ctx: HubContext, request: AbRequest, min_effect: float | None, seed: int, device: str
) -> AbReport:
    """Profile both models on AI Hub ``device`` and record the comparison."""
    import numpy as np

    from edgehub.core.runtimes import get_runtime
    from edgehub.ops.ab import UNPAIRED, AbReport, ab_run, record_report
    from edgehub.toolchains.qai_hub.ab import profile_pair
    from edgehub.toolchains.qai_hub.session import session_for
    from edgehub.tracking.profile_compare import MIN_EFFECT, compare_samples

    session_for(ctx)  # the client and its token, checked before anything is recorded
    profiler = get_runtime(request.runtime).profiler
    a, b = request.model_a.resolve(), request.model_b.resolve()
    effect = MIN_EFFECT if min_effect is None else min_effect
    with ab_run(
        ctx, request, device, method=UNPAIRED, test=UNPAIRED_TEST, seed=seed, min_effect=effect
    ) as run:
        ctx.events.info(f"{NOT_INTERLEAVED}: both submitted, then both waited for")
        found = profile_pair(ctx, {"a": a, "b": b}, device=device, component=profiler)
        children = {
            side: _child(ctx, run, side, model, found[side], request.runtime, profiler)
            for side, model in (("a", a), ("b", b))
        }
        ctx.client.log_params({"run_a": children["a"], "run_b": children["b"]})
        verdict = compare_samples(
            np.asarray(found["a"].summary.samples_us, dtype=np.float64) / 1000.0,
            np.asarray(found["b"].summary.samples_us, dtype=np.float64) / 1000.0,
            run_a=children["a"],
            run_b=children["b"],
            max_regression=request.max_regression,
            min_effect=effect,
            seed=seed,
        )
        median = verdict.median
        report = AbReport(
            run_id=run.run_id,
            run_a=children["a"],
            run_b=children["b"],
            device=device,
            seed=seed,
            verdict=verdict,
            median_a_ms=median.a_ms,
            median_b_ms=median.b_ms,
            runs_per_block={},
            rounds=[],
            method=UNPAIRED,
            jobs={side: {"id": p.job_id, "url": p.url} for side, p in found.items()},
        )
        differences = {
            "ratio_median": median.b_ms / median.a_ms if median.a_ms else float("nan"),
            "ratio_ci_low": 1.0 + median.ci_pct[0] / 100.0,
            "ratio_ci_high": 1.0 + median.ci_pct[1] / 100.0,
            "mann_whitney_p": verdict.mann_whitney_p,
        }
        return record_report(ctx, report, differences)


def _child(
    ctx: HubContext,
    parent: RunLog,
    side: str,
    model: Path,
    found: HubProfile,
    runtime: str,
    profiler: type[Any],
) -> str:
    """One model's PROFILE run under the comparison: its job, samples and statistics."""
    from edgehub.ops.ab import child_run
    from edgehub.ops.reports import log_json
    from edgehub.toolchains.outputs import log_figures

    job = {"qai_hub_profile_job_id": found.job_id, "qai_hub_profile_job_url": found.url}
    with child_run(ctx, parent, side, model, runtime, profiler, **job) as run_id:
        ctx.client.log_tag("qai_hub_profile_job", found.job_id)
        log_figures(ctx, found.summary.metrics)
        ctx.client.log_params(found.summary.params)
        log_json(ctx, "profile.json", found.document(), name="output_file", indent=1)
        return run_id
