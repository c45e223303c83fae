"""Comparing two profile runs from their raw latency samples: a regression gate.

A profile run stores its per-run latencies (µs) as ``samples_us`` in a JSON artifact
(``profile.json``, logged as ``output_file``). From those, `compare_profiles` gives the median
and p99 of A and B, their deltas with bootstrap 95 % confidence intervals, the Mann-Whitney p
value, and whether B regressed: B is slower than A by more than ``max_regression`` (a fraction)
with confidence, i.e. the CI's lower bound of the relative median delta exceeds it.

The samples of one run cannot show how much two runs of the same model differ (the machine's
load, clocks and cache state move between runs), so with hundreds of samples a 2 % drift is
already "statistically" certain. A difference is called significant only when its CI excludes
0 *and* it is at least ``min_effect`` (default `MIN_EFFECT`, the run-to-run variation of a
shared machine), as benchmark comparison tools commonly do; ``statistically_significant``
keeps the first test alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.tracking.paired import gate_note, verdict_dict
from edgehub.tracking.records import RunRecord
from edgehub.tracking.significance import (
    bootstrap_quantile_deltas,
    mann_whitney_u,
    quantile,
)
from edgehub.tracking.verdict_numbers import checked_numbers

if TYPE_CHECKING:
    from edgehub.tracking.significance import BootstrapDeltas, FloatArray


CONFIDENCE = 0.95
MIN_SAMPLES = 10
MIN_EFFECT = 0.05  # differences below 5 % are within run-to-run variation


@dataclass(frozen=True)
class QuantileDelta:
    """One latency quantile (ms) of A and B: ``b - a``, its percent, and 95 % CIs of both."""

    quantile: float
    a_ms: float
    b_ms: float
    delta_ms: float
    delta_pct: float
    ci_ms: tuple[float, float]
    ci_pct: tuple[float, float]
    min_effect: float = 0.0

    @property
    def statistically_significant(self) -> bool:
        """The confidence interval of the delta excludes 0."""
        return self.ci_ms[0] > 0 or self.ci_ms[1] < 0

    @property
    def significant(self) -> bool:
        """The CI of the delta excludes 0 and the delta is at least ``min_effect``."""
        return self.statistically_significant and abs(self.delta_pct) >= 100.0 * self.min_effect


@dataclass(frozen=True)
class ProfileComparison:
    """The latency of profile run B against profile run A."""

    run_a: str
    run_b: str
    samples_a: int
    samples_b: int
    median: QuantileDelta
    p99: QuantileDelta
    mann_whitney_u: float
    mann_whitney_p: float
    max_regression: float | None
    resamples: int
    seed: int
    confidence: float = CONFIDENCE
    min_effect: float = MIN_EFFECT

    @property
    def statistically_significant(self) -> bool:
        """The CI of the median delta excludes 0 (at these sample sizes)."""
        return self.median.statistically_significant

    @property
    def significant(self) -> bool:
        """The medians differ beyond run-to-run variation: the CI of their delta excludes 0,
        and the delta is at least ``min_effect``."""
        return self.median.significant

    @property
    def regressed(self) -> bool:
        """B is slower than A by more than ``max_regression``, with confidence."""
        if self.max_regression is None:
            return False
        return self.median.ci_pct[0] / 100.0 > self.max_regression

    @property
    def verdict(self) -> str:
        """One line for people: what changed and whether it counts."""
        change = "slower" if self.median.delta_ms > 0 else "faster"
        size = f"B is {abs(self.median.delta_pct):.1f}% {change} (median)"
        low, high = self.median.ci_pct
        interval = f"95% CI {low:+.1f}% .. {high:+.1f}%"
        floor = f"{100 * self.min_effect:g}%"
        if not self.statistically_significant:
            verdict = f"{size}, not significant at these sample sizes ({interval})"
        elif not self.significant:
            verdict = f"{size}, not significant: within the {floor} run-to-run noise ({interval})"
        else:
            verdict = f"{size}, significant ({interval})"
        return verdict + gate_note(self.max_regression, self.regressed, "%")

    def to_dict(self) -> dict[str, Any]:
        data = verdict_dict(self, statistically_significant=self.statistically_significant)
        for key, q in (("median", self.median), ("p99", self.p99)):
            data[key]["significant"] = q.significant
            data[key]["statistically_significant"] = q.statistically_significant
        return data


def profile_samples(record: RunRecord) -> FloatArray:
    """The raw per-run latencies (ms) a profile run stored (``samples_us`` of its JSON); a
    run whose samples are not all finite positive numbers is refused (`UsageError`)."""
    whose = f"run {record.run_id[:8]} ({record.run_type} {record.name})"
    candidates = [a for a in record.all_artifacts if a.is_stored and a.file_name.endswith(".json")]
    candidates.sort(key=lambda a: (a.name != "output_file", a.file_name != "profile.json"))
    for artifact in candidates:
        path = artifact.local()
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        samples = document.get("samples_us") if isinstance(document, dict) else None
        if isinstance(samples, list) and samples:
            return checked_numbers(samples, whose=whose) / 1000.0
    raise UsageError(
        f"{whose} has no raw latency samples (a profile.json with samples_us); compare two "
        "profile runs"
    )


def _delta(
    q: float, a: FloatArray, b: FloatArray, boot: BootstrapDeltas, min_effect: float
) -> QuantileDelta:
    import numpy as np

    tail = (1.0 - CONFIDENCE) / 2.0
    qa, qb = quantile(a, q), quantile(b, q)
    low, high = np.quantile(boot.absolute[q], [tail, 1.0 - tail])
    low_pct, high_pct = 100.0 * np.nanquantile(boot.relative[q], [tail, 1.0 - tail])
    return QuantileDelta(
        quantile=q,
        a_ms=qa,
        b_ms=qb,
        delta_ms=qb - qa,
        delta_pct=100.0 * (qb / qa - 1.0) if qa else float("nan"),
        ci_ms=(float(low), float(high)),
        ci_pct=(float(low_pct), float(high_pct)),
        min_effect=min_effect,
    )


def _whose(run: str, side: str) -> str:
    return f"run {run[:8]}" if run != side else f"sample {side}"


def compare_samples(
    a: FloatArray,
    b: FloatArray,
    *,
    run_a: str = "A",
    run_b: str = "B",
    max_regression: float | None = None,
    min_effect: float = MIN_EFFECT,
    resamples: int = 2000,
    seed: int = 0,
) -> ProfileComparison:
    """Compare two latency samples (ms). ``max_regression`` and ``min_effect`` are fractions
    (0.05 = 5 %). Samples that are not all finite positive numbers are refused."""
    x = checked_numbers(a, whose=_whose(run_a, "A"))
    y = checked_numbers(b, whose=_whose(run_b, "B"))
    if min(len(x), len(y)) < MIN_SAMPLES:
        raise UsageError(
            f"too few latency samples to compare ({len(x)} and {len(y)}; at least "
            f"{MIN_SAMPLES} each): profile with more runs"
        )
    if max_regression is not None and not 0 <= max_regression < 10:
        raise UsageError(f"max regression must be a fraction such as 0.05, got {max_regression}")
    if not 0 <= min_effect < 10:
        raise UsageError(f"min effect must be a fraction such as 0.05, got {min_effect}")
    boot = bootstrap_quantile_deltas(x, y, (0.5, 0.99), resamples=resamples, seed=seed)
    u, p = mann_whitney_u(x, y)
    return ProfileComparison(
        run_a=run_a,
        run_b=run_b,
        samples_a=len(x),
        samples_b=len(y),
        median=_delta(0.5, x, y, boot, min_effect),
        p99=_delta(0.99, x, y, boot, min_effect),
        mann_whitney_u=u,
        mann_whitney_p=p,
        max_regression=max_regression,
        resamples=resamples,
        seed=seed,
        min_effect=min_effect,
    )


def compare_profiles(
    a: RunRecord,
    b: RunRecord,
    *,
    max_regression: float | None = None,
    min_effect: float = MIN_EFFECT,
    resamples: int = 2000,
    seed: int = 0,
) -> ProfileComparison:
    """Compare profile runs ``a`` (baseline) and ``b`` from their stored raw samples."""
    return compare_samples(
        profile_samples(a),
        profile_samples(b),
        run_a=a.run_id,
        run_b=b.run_id,
        max_regression=max_regression,
        min_effect=min_effect,
        resamples=resamples,
        seed=seed,
    )
