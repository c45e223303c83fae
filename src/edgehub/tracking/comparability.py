"""Whether two profiles ran under conditions close enough for their latencies to be compared.

A profile's conditions (``agent.conditions``) are stored as ``conditions.*`` entries of its
environment. Two runs are **not comparable** when, in their recorded conditions:

- the CPU model (``cpu_model``) differs;
- the frequency governor (``governor``) differs;
- the container's CPU quota (``cpu_quota``) or cpuset (``cpuset``) differs;
- either run saw throttling: a non-zero ``throttled`` flag or count, or its hottest thermal
  zone rose by more than `MAX_TEMP_RISE_C` during the timed loop;
- other processes took more than `MAX_OTHER_CPU_SHARE` of the host's CPUs during either run's
  timed loop (``other_cpu_share``);
- either run recorded one of those numbers as something else than a finite number (NaN, inf,
  text): what it would show cannot be judged.

An entry only one run recorded is not judged. Runs without any recorded conditions (older runs,
runtimes that do not record them) compare as before, with a note saying so. Runs on images of
different digests (``image_digest``: another build, e.g. on another cluster node, or another
toolchain version) compare with a note naming both: the toolchain is part of what differs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

PREFIX = "conditions."
MAX_OTHER_CPU_SHARE = 0.25  # of all host CPUs, during the timed loop
MAX_TEMP_RISE_C = 15.0  # hottest zone, end of the timed loop less its start
_SAME = (
    ("cpu_model", "CPU model"),
    ("governor", "frequency governor"),
    ("cpu_quota", "container CPU quota"),
    ("cpuset", "container cpuset"),
)
_NOT_THROTTLED = ("", "0", "0x0", "false", "no", "none")


@dataclass(frozen=True)
class Comparability:
    """Whether runs A and B ran under comparable conditions; ``reasons`` why not, ``notes``
    on what could not be judged."""

    comparable: bool
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "comparable": self.comparable,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "thresholds": {
                "max_other_cpu_share": MAX_OTHER_CPU_SHARE,
                "max_temp_rise_c": MAX_TEMP_RISE_C,
            },
        }


def conditions_of(environment: dict[str, str]) -> dict[str, str]:
    """The ``conditions.*`` entries of a run's environment, without the prefix."""
    return {k[len(PREFIX) :]: v for k, v in environment.items() if k.startswith(PREFIX)}


def _shown(value: str) -> str:
    """A recorded value as quoted in a reason: escaped, and cut to 60 characters."""
    return repr(value if len(value) <= 60 else value[:57] + "...")


_NUMBERS = ("temp_max_c", "temp_max_c_end", "other_cpu_share")


def _number(text: str | None) -> float | None:
    """A recorded finite number; None for none, text, NaN or inf (see `_unreadable`)."""
    try:
        value = None if text is None else float(text)
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _unreadable(label: str, conditions: dict[str, str]) -> list[str]:
    """A recorded condition that should be a number and is not (NaN, inf, text): what it
    would have judged cannot be, so the runs do not count as comparable."""
    return [
        f"run {label} recorded {key} = {_shown(conditions[key])}, not a finite number"
        for key in _NUMBERS
        if key in conditions and _number(conditions[key]) is None
    ]


def _run_reasons(label: str, conditions: dict[str, str]) -> list[str]:
    """What makes one run's own measurement suspect: throttling, a hot loop, a busy machine,
    a condition that should be a number and is not."""
    reasons = _unreadable(label, conditions)
    throttled = conditions.get("throttled")
    if throttled is not None and throttled.strip().lower() not in _NOT_THROTTLED:
        reasons.append(f"run {label} was throttled (throttled = {_shown(throttled)})")
    start, end = _number(conditions.get("temp_max_c")), _number(conditions.get("temp_max_c_end"))
    if start is not None and end is not None and end - start > MAX_TEMP_RISE_C:
        reasons.append(
            f"run {label} heated up by {end - start:.1f} °C during its loop "
            f"(more than {MAX_TEMP_RISE_C:g} °C: throttling likely)"
        )
    share = _number(conditions.get("other_cpu_share"))
    if share is not None and share > MAX_OTHER_CPU_SHARE:
        reasons.append(
            f"other processes took {100 * share:.0f}% of the CPUs during run {label} "
            f"(more than {100 * MAX_OTHER_CPU_SHARE:g}%)"
        )
    return reasons


def check_comparability(env_a: dict[str, str], env_b: dict[str, str]) -> Comparability:
    """Judge two runs' environments (``RunRecord.environment``) by the rules above."""
    a, b = conditions_of(env_a), conditions_of(env_b)
    images = _image_notes(env_a, env_b)
    missing = [label for label, c in (("A", a), ("B", b)) if not c]
    if missing:
        which = " and ".join(missing)
        return Comparability(
            True,
            notes=[
                f"run {which} recorded no conditions (an older run or another runtime): "
                "compared without checking them",
                *images,
            ],
        )
    reasons = []
    for key, title in _SAME:
        if key in a and key in b and a[key] != b[key]:
            reasons.append(f"different {title}: {_shown(a[key])} vs {_shown(b[key])}")
    reasons += _run_reasons("A", a) + _run_reasons("B", b)
    notes = [
        f"{title} recorded for one run only" for key, title in _SAME if (key in a) != (key in b)
    ]
    return Comparability(not reasons, reasons, notes + images)


def _image_notes(env_a: dict[str, str], env_b: dict[str, str]) -> list[str]:
    """A note where the two runs ran on images of different digests."""
    a, b = env_a.get("image_digest"), env_b.get("image_digest")
    if not a or not b or a == b:
        return []
    return [f"ran on different images: A {_shown(a[:19])}, B {_shown(b[:19])} (another build)"]
