"""Queries over the run store: list with filters, show one run (a profile's percentiles with
their confidence intervals from its samples: `latency_percentiles`), compare two.

Comparing two profile runs adds a latency comparison from their raw samples (deltas with
confidence intervals, significance, and a regression verdict for ``max_regression``); for the
two profiles of one `hub exec ab`, the verdict comes from its paired rounds instead; two eval
runs, an accuracy comparison from their per-sample values (`ops.eval.compare`). Two profiles
are also checked for comparable recorded conditions (`tracking.comparability`); a regression
gate over two runs that are not comparable does not count unless the caller allows it.
A viewer (the TUI) asks with ``strict=False``: what cannot be compared is then left out with
its reason in `Comparison.problems`, and the rest still compares.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from edgehub.ops.eval.compare import AccuracyComparison
    from edgehub.ops.project import Project
    from edgehub.tracking.comparability import Comparability
    from edgehub.tracking.compare import RunComparison
    from edgehub.tracking.paired import PairedVerdict
    from edgehub.tracking.percentiles import PercentileCI
    from edgehub.tracking.profile_compare import ProfileComparison
    from edgehub.tracking.records import RunFilter, RunRecord
    from edgehub.tracking.significance import FloatArray


_T = TypeVar("_T")


def list_runs(project: Project, run_filter: RunFilter) -> list[RunRecord]:
    """Runs matching ``run_filter``, newest first."""
    with closing(project.store()) as store:
        return store.query_runs(run_filter)


def filter_values(project: Project) -> dict[str, list[str]]:
    """The values the stored runs have for ``run_type``, ``runtime`` and ``device`` (the
    fields a `RunFilter` matches exactly), each sorted."""
    with closing(project.store()) as store:
        return {
            "run_type": store.distinct_values("type"),
            "runtime": store.distinct_values("runtime"),
            "device": store.distinct_values("device"),
        }


def show_run(project: Project, ref: str, run_type: str | None = None) -> RunRecord:
    """One run by id, unique prefix, ``latest`` or ``latest:<type>``."""
    with closing(project.store()) as store:
        return store.get_run(ref, run_type=run_type)


def latency_percentiles(run: RunRecord) -> list[PercentileCI]:
    """p50, p90 and p99 of a run's raw latency samples (ms) with their 95 % CIs (empty: the
    run stored no samples, e.g. not a profile)."""
    from edgehub.tracking.percentiles import percentile_cis

    samples = _samples_ms(run)
    return [] if samples is None else percentile_cis(samples)


def latency_samples(run: RunRecord) -> list[float]:
    """A profile's raw latencies (ms) as `compare_runs` reads them; empty when the run stored
    none, or ones that cannot enter a verdict (NaN, text, zero: `runs compare` refuses those)."""
    samples = _samples_ms(run)
    return [] if samples is None else [float(s) for s in samples]


def _samples_ms(run: RunRecord) -> FloatArray | None:
    from edgehub.tracking.profile_compare import profile_samples

    try:
        return profile_samples(run)
    except UsageError:
        return None


@dataclass
class Comparison:
    """Two runs side by side; ``latency`` when both are profiles, ``accuracy`` when both are
    evals."""

    runs: RunComparison
    latency: ProfileComparison | None = None
    accuracy: AccuracyComparison | None = None
    paired: PairedVerdict | None = None  # two profiles of one `hub exec ab`: its rounds' verdict
    comparability: Comparability | None = None  # two profiles: their recorded conditions
    a: RunRecord | None = None  # the runs compared
    b: RunRecord | None = None
    problems: list[str] = field(default_factory=list)  # strict=False: what was left out, why

    @property
    def verdict(self) -> str | None:
        """The line that decides for two profiles: their A/B run's paired rounds where they
        have one, else their samples' latency comparison; None for other runs."""
        if self.paired is not None:
            return self.paired.verdict
        return None if self.latency is None else self.latency.verdict

    @property
    def comparable(self) -> bool:
        """Not known to have run under different conditions (see `tracking.comparability`)."""
        return self.comparability is None or self.comparability.comparable

    @property
    def paired_heading(self) -> str | None:
        """Two profiles of one A/B run: the line that says its paired rounds decide."""
        if self.paired is None:
            return None
        return f"the {self.paired.rounds} paired rounds of their A/B run decide:"

    def condition_lines(self) -> tuple[list[str], list[str]]:
        """The conditions check in `hub runs compare`'s words: NOT COMPARABLE with its reasons
        (empty where comparable), and its notes."""
        found = self.comparability
        if found is None:
            return [], []
        notes = [f"note: {note}" for note in found.notes]
        if found.comparable:
            return [], notes
        header = "NOT COMPARABLE, by the conditions the runs recorded:"
        return [header, *(f"  - {reason}" for reason in found.reasons)], notes

    @property
    def regressed(self) -> bool:
        if self.paired is not None:
            return self.paired.regressed
        return self.latency is not None and self.latency.regressed

    def to_dict(self) -> dict[str, Any]:
        data = self.runs.to_dict()
        for name in ("latency", "accuracy", "paired", "comparability"):
            found = getattr(self, name)
            if found is not None:
                data[name] = found.to_dict()
        if self.problems:
            data["problems"] = list(self.problems)
        return data


def compare_runs(
    project: Project,
    ref_a: str,
    ref_b: str,
    *,
    max_regression: float | None = None,
    min_effect: float | None = None,
    strict: bool = True,
) -> Comparison:
    """Compare runs A and B; ``max_regression`` (a fraction) asks for a regression verdict,
    which needs two profile runs; ``min_effect`` (a fraction) is the smallest latency change
    called significant (default: the profile comparison's). A latency or accuracy comparison
    that cannot be made (no raw samples, samples or rounds that are not numbers) is refused
    (`UsageError`), or with ``strict=False`` left out with its reason in ``problems``."""
    from edgehub.tracking.compare import compare_runs as diff_runs
    from edgehub.tracking.profile_compare import MIN_EFFECT, compare_profiles

    with closing(project.store()) as store:
        a, b = store.get_run(ref_a), store.get_run(ref_b)
        siblings = a.parent_run_id is not None and a.parent_run_id == b.parent_run_id
        parent = store.get_run(a.parent_run_id) if siblings and a.parent_run_id else None
    profiles = a.run_type == b.run_type == "PROFILE"
    for name, given in (("max_regression", max_regression), ("min_effect", min_effect)):
        if given is not None and not profiles:
            raise UsageError(
                f"{{field}} compares two profile runs; got {a.run_type} and {b.run_type}",
                field=name,
            )
    effect = MIN_EFFECT if min_effect is None else min_effect
    problems: list[str] = []

    def attempt(compare: Callable[[], _T]) -> _T | None:
        try:
            return compare()
        except UsageError as error:
            if strict:
                raise
            problems.append(str(error))
            return None

    latency = (
        attempt(lambda: compare_profiles(a, b, max_regression=max_regression, min_effect=effect))
        if profiles
        else None
    )
    accuracy = None
    if a.run_type == b.run_type == "EVAL":
        from edgehub.ops.eval.compare import compare_evals

        accuracy = attempt(lambda: compare_evals(a, b))
    paired = None
    if profiles and parent is not None:
        from edgehub.ops.ab import paired_from_parent

        paired = attempt(
            lambda: paired_from_parent(
                parent, a, b, max_regression=max_regression, min_effect=min_effect
            )
        )
    comparability = _comparability(a, b, paired=paired is not None) if profiles else None
    runs = diff_runs(a, b)
    return Comparison(runs, latency, accuracy, paired, comparability, a, b, problems)


def _comparability(a: RunRecord, b: RunRecord, *, paired: bool) -> Comparability:
    """The conditions check of two profiles; the two of one A/B run share their rounds'
    conditions, so what it finds is only a note there (drift hit both models alike)."""
    from edgehub.tracking.comparability import Comparability, check_comparability

    found = check_comparability(a.environment, b.environment)
    if not paired or found.comparable:
        return found
    shared = "measured in the same interleaved rounds, so this hit both alike: "
    return Comparability(True, notes=[shared + r for r in found.reasons] + found.notes)
