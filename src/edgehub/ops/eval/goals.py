"""Accuracy goals: ``METRIC[:OUTPUT] OP VALUE`` and ``max-degradation=X%``.

``OP`` is ``>=``, ``>``, ``<=`` or ``<``; ``VALUE`` is a number, a percentage (``99%``), or
``reference`` scaled by a factor (``0.99*reference``: the reference model's value of the same
task metric). ``METRIC`` is an output figure (``cosine``, ``cosine_min``, ``max_abs``,
``mean_abs``, ``snr_db``, ``psnr_db``: without ``:OUTPUT`` the worst output's value counts) or
a task metric (``top1``, ``top5``, ``iou``, ``mse`` or one from ``edgehub.metrics``).
``max-degradation=X%`` holds when every task metric asked for stays within X % (relative) of
the reference's value: not below it for metrics where higher is better, not above it for
``mse``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from edgehub.errors import UsageError
from edgehub.toolchains.metrics import OUTPUT_FIGURES

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_GOAL = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][\w.-]*)(?::(?P<output>[^<>=\s]+))?\s*(?P<op>>=|<=|>|<)\s*"
    r"(?P<value>.+?)\s*$"
)
_SCALED = re.compile(r"^(?:(?P<factor>[0-9.eE+-]+)\s*\*\s*)?reference$")
_DEGRADATION = re.compile(r"^\s*max-degradation\s*=\s*(?P<value>[0-9.eE+-]+)\s*(?P<pct>%?)\s*$")
_HOW = (
    "write e.g. 'top1>=0.99*reference', 'cosine>=0.999', 'snr_db:logits>30' or 'max-degradation=1%'"
)


@dataclass(frozen=True)
class Goal:
    """One parsed goal; ``factor`` set means ``VALUE`` is ``factor * reference``."""

    text: str
    metric: str
    op: str = ">="
    value: float = 0.0
    output: str | None = None
    factor: float | None = None
    degradation: float | None = None

    @property
    def task_metrics(self) -> list[str]:
        """The task metrics this goal needs computed."""
        if self.degradation is not None or self.metric in OUTPUT_FIGURES:
            return []
        return [self.metric]


@dataclass
class GoalResult:
    goal: str
    passed: bool
    checks: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "passed": self.passed, "checks": self.checks}


def _number(text: str, goal: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"goal {goal!r}: {text!r} is not a number; {_HOW}") from None


def parse_goal(text: str) -> Goal:
    """A `Goal` from its text; a `UsageError` saying how to write one otherwise."""
    degradation = _DEGRADATION.match(text)
    if degradation:
        value = _number(degradation["value"], text)
        fraction = value / 100.0 if degradation["pct"] else value
        if not 0.0 <= fraction < 1.0:
            raise UsageError(f"goal {text!r}: the degradation must be between 0 and 100%")
        return Goal(text, "max-degradation", degradation=fraction)
    match = _GOAL.match(text)
    if not match:
        raise UsageError(f"cannot read goal {text!r}; {_HOW}")
    metric, raw = match["metric"], match["value"].replace(" ", "")
    scaled = _SCALED.match(raw)
    if scaled:
        if metric in OUTPUT_FIGURES:
            raise UsageError(
                f"goal {text!r}: {metric} compares with the reference already; give a number"
            )
        factor = _number(scaled["factor"], text) if scaled["factor"] else 1.0
        return Goal(text, metric, match["op"], 0.0, match["output"], factor=factor)
    value = _number(raw[:-1], text) / 100.0 if raw.endswith("%") else _number(raw, text)
    return Goal(text, metric, match["op"], value, match["output"])


def check_goal(
    goal: Goal, figures: Mapping[str, Mapping[str, float]], tasks: Mapping[str, Mapping[str, float]]
) -> GoalResult:
    """Judge ``goal`` on ``figures`` (output -> figure -> value) and ``tasks`` (metric ->
    {"model", "reference"})."""
    if goal.degradation is not None:
        checks = [
            _degradation_check(name, values, goal.degradation) for name, values in tasks.items()
        ]
        return GoalResult(goal.text, all(c["passed"] for c in checks), checks)
    if goal.metric in OUTPUT_FIGURES:
        return _figure_goal(goal, figures)
    values = tasks[goal.metric]
    threshold = goal.value if goal.factor is None else goal.factor * values["reference"]
    passed = _OPS[goal.op](values["model"], threshold)
    return GoalResult(goal.text, passed, [_check(goal.metric, values["model"], threshold, passed)])


def _check(
    metric: str, value: float, threshold: float, passed: bool, **where: str
) -> dict[str, Any]:
    """One check of a goal, as `GoalResult.checks` keeps it."""
    return {"metric": metric, **where, "value": value, "threshold": threshold, "passed": passed}


def _figure_goal(goal: Goal, figures: Mapping[str, Mapping[str, float]]) -> GoalResult:
    if goal.output is not None and goal.output not in figures:
        raise UsageError(
            f"goal {goal.text!r}: the model has no output {goal.output!r}; outputs: "
            f"{', '.join(figures)}"
        )
    names = [goal.output] if goal.output is not None else list(figures)
    checks = []
    for name in names:
        value = figures[name][goal.metric]
        passed = _OPS[goal.op](value, goal.value)
        checks.append(_check(goal.metric, value, goal.value, passed, output=name))
    return GoalResult(goal.text, all(c["passed"] for c in checks), checks)


def _degradation_check(name: str, values: Mapping[str, float], fraction: float) -> dict[str, Any]:
    reference, model = values["reference"], values["model"]
    if name != "mse":  # every task metric but mse: higher is better
        threshold = reference - fraction * abs(reference)
        passed = model >= threshold
    else:
        threshold = reference + fraction * abs(reference)
        passed = model <= threshold
    return _check(name, model, threshold, passed)
