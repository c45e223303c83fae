"""A verdict from paired measurements: the per-round ratios B/A of an interleaved A/B comparison.

Each round measured A and B back to back, so drift of the machine cancels within a round; the
rounds are the independent units. The verdict uses two tests on the ratios:

- a percentile bootstrap confidence interval of the median ratio (rounds resampled), and
- the exact two-sided sign test (rounds with B slower against rounds with B faster; ties out).

B differs from A (``significant``) when the CI excludes 1, the sign test's p is below
``1 - confidence``, and the median ratio is at least ``min_effect`` away from 1 (a floor for
what this machine can resolve). B ``regressed`` when it is significantly slower and the CI's
lower bound is more than ``max_regression`` above 1, as in the profile comparison's gate.

numpy is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from edgehub.errors import UsageError

MIN_EFFECT = 0.02  # interleaving resolves about 1 % on a loaded 2-core machine; 2 % is a safe floor
CONFIDENCE = 0.95
MIN_ROUNDS = 6  # fewer rounds cannot reach p < 0.05 in a two-sided sign test


def sign_test(slower: int, faster: int) -> float:
    """The exact two-sided p of ``slower`` against ``faster`` under a fair coin (ties dropped)."""
    n = slower + faster
    if n == 0:
        return 1.0
    k = min(slower, faster)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


@dataclass(frozen=True)
class PairedVerdict:
    """B against A from the per-round ratios B/A."""

    rounds: int
    median_ratio: float
    ci: tuple[float, float]
    slower: int
    faster: int
    sign_p: float
    min_effect: float
    max_regression: float | None
    confidence: float
    resamples: int
    seed: int

    @property
    def delta_pct(self) -> float:
        return 100.0 * (self.median_ratio - 1.0)

    @property
    def ci_pct(self) -> tuple[float, float]:
        return (100.0 * (self.ci[0] - 1.0), 100.0 * (self.ci[1] - 1.0))

    @property
    def significant(self) -> bool:
        """The CI excludes 1, the sign test agrees, and the effect is at least ``min_effect``."""
        excludes = self.ci[0] > 1.0 or self.ci[1] < 1.0
        return (
            excludes
            and self.sign_p < 1.0 - self.confidence
            and abs(self.median_ratio - 1.0) >= self.min_effect
        )

    @property
    def regressed(self) -> bool:
        """Significantly slower, by more than ``max_regression`` with confidence."""
        if self.max_regression is None or not self.significant:
            return False
        return self.median_ratio > 1.0 and self.ci[0] - 1.0 > self.max_regression

    @property
    def verdict(self) -> str:
        low, high = self.ci_pct
        ci = f"{100 * self.confidence:g} % CI {low:+.1f} % .. {high:+.1f} %"
        if not self.significant:
            text = (
                f"B vs A: {self.delta_pct:+.1f} %, not significant ({ci}, sign p {self.sign_p:.2g})"
            )
        else:
            word = "slower" if self.median_ratio > 1 else "faster"
            text = (
                f"B is {abs(self.delta_pct):.1f} % {word} than A: significant ({ci}, "
                f"sign test {self.slower} slower / {self.faster} faster, p {self.sign_p:.2g})"
            )
        return text + gate_note(self.max_regression, self.regressed)

    def to_dict(self) -> dict[str, Any]:
        data = verdict_dict(self, delta_pct=self.delta_pct, ci_pct=list(self.ci_pct))
        data["ci"] = list(self.ci)
        return data


def verdict_dict(verdict: Any, **more: Any) -> dict[str, Any]:
    """A verdict (a dataclass with ``significant``, ``regressed`` and ``verdict``) as JSON-ready
    fields, with what it concluded and ``more``."""
    concluded = {"significant": verdict.significant, "regressed": verdict.regressed}
    return {**asdict(verdict), **concluded, **more, "verdict": verdict.verdict}


def gate_note(max_regression: float | None, regressed: bool, percent: str = " %") -> str:
    """The end of a verdict line for the regression gate ``max_regression`` (a fraction; None:
    no gate, no note): whether B regressed beyond it."""
    if max_regression is None:
        return ""
    limit = f"{100 * max_regression:g}{percent}"
    return f"; REGRESSION beyond {limit}" if regressed else f"; within {limit}"


def paired_verdict(
    ratios: list[float],
    *,
    min_effect: float = MIN_EFFECT,
    max_regression: float | None = None,
    confidence: float = CONFIDENCE,
    resamples: int = 5000,
    seed: int = 0,
) -> PairedVerdict:
    """The verdict on ``ratios`` (one B/A per round, all positive)."""
    import numpy as np

    from edgehub.tracking.verdict_numbers import checked_numbers

    if len(ratios) < MIN_ROUNDS:
        raise UsageError(
            f"{len(ratios)} rounds cannot show a difference; give at least {MIN_ROUNDS} rounds"
        )
    values = checked_numbers(ratios, "round ratios B/A", whose="this A/B comparison")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    medians = np.median(values[picks], axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(medians, [alpha / 2.0, 1.0 - alpha / 2.0])
    slower = int(np.sum(values > 1.0))
    faster = int(np.sum(values < 1.0))
    return PairedVerdict(
        rounds=len(values),
        median_ratio=float(np.median(values)),
        ci=(float(low), float(high)),
        slower=slower,
        faster=faster,
        sign_p=sign_test(slower, faster),
        min_effect=min_effect,
        max_regression=max_regression,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
