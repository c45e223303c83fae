"""`transform`: conversions until nothing matches (bounded), then one fusion pass (by default
the active backend's lists). `plan` stops before the fusions, for a plan to read and edit, then
hand back to `transform(model, plan=...)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from edgehub.deploy.graph import Graph
from edgehub.deploy.model_io import ModelLike, load_model
from edgehub.deploy.pattern import Pattern, Phase, split_phases
from edgehub.deploy.planning import Plan, apply_matches, find_matches
from edgehub.deploy.report import TransformReport

if TYPE_CHECKING:
    from collections.abc import Sequence

    import onnx


MAX_CONVERSION_ROUNDS = 8


class TransformResult(NamedTuple):
    model: onnx.ModelProto
    report: TransformReport


def plan(
    model: ModelLike,
    patterns: Sequence[type[Pattern]] | None = None,
    *,
    max_rounds: int = MAX_CONVERSION_ROUNDS,
) -> Plan:
    """Apply the conversions to a copy of ``model``, then plan the fusions on the result."""
    conversions, fusions = split_phases(patterns, (Phase.CONVERSION, Phase.FUSION), "transform()")
    graph = Graph(load_model(model))
    report = TransformReport.starting(graph.model, (*conversions, *fusions))
    for _ in range(max_rounds):
        matches = find_matches(graph, conversions)
        if not any(m.apply for m in matches):
            break
        apply_matches(graph, matches, report)
        report.conversion_rounds += 1
    else:
        report.converged = not any(m.apply for m in find_matches(graph, conversions))
    graph.finish()
    return Plan(graph.model, find_matches(graph, fusions), fusions, report)


def transform(
    model: ModelLike, patterns: Sequence[type[Pattern]] | None = None, plan: Plan | None = None
) -> TransformResult:
    """The transformed copy of ``model`` and what each pattern did.

    With ``plan`` (from `plan`, possibly edited) its model and matches are applied instead;
    ``model`` and ``patterns`` are then ignored.
    """
    chosen = plan if plan is not None else _make_plan(model, patterns)
    graph = Graph(load_model(chosen.model))  # the plan stays reusable
    report = chosen.report
    apply_matches(graph, chosen.matches, report)
    report.set_after(graph.model)
    return TransformResult(graph.model, report)


_make_plan = plan
