"""Plans: where each pattern matches, editable (``Match.apply``) before it is applied.

Patterns are matched in list order (put the longest, most specific first), then graph order; a
match that shares a node with an earlier kept match is switched off and says which it lost to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgehub.deploy.pattern import Match, Pattern
from edgehub.errors import UsageError

if TYPE_CHECKING:
    import onnx

    from edgehub.deploy.graph import Graph
    from edgehub.deploy.report import TransformReport


class PlanError(UsageError, ValueError):
    """A plan cannot be applied as edited (overlapping enabled matches, stale nodes)."""


@dataclass
class Plan:
    """The fusion matches on ``model`` (the model after its conversions) and the report so
    far (the conversions that already ran)."""

    model: onnx.ModelProto
    matches: list[Match]
    patterns: tuple[type[Pattern], ...]
    report: TransformReport

    def by_pattern(self) -> dict[str, list[Match]]:
        grouped: dict[str, list[Match]] = {p.__name__: [] for p in self.patterns}
        for match in self.matches:
            grouped.setdefault(match.pattern.__name__, []).append(match)
        return grouped

    def overlaps(self) -> list[Match]:
        """The matches the planner switched off because an earlier match took their nodes."""
        return [m for m in self.matches if m.skipped is not None]

    def describe(self) -> str:
        """A readable listing: one line per match (``-`` marks one that will not apply)."""
        lines = []
        for match in self.matches:
            mark = "+" if match.apply else "-"
            why = f"  ({match.skipped})" if match.skipped else ""
            lines.append(f"{mark} {match.pattern.__name__}: {', '.join(match.nodes)}{why}")
        return "\n".join(lines) or "no matches"

    def to_dict(self) -> dict[str, Any]:
        return {"matches": [m.to_dict() for m in self.matches], "report": self.report.to_dict()}


def find_matches(graph: Graph, patterns: tuple[type[Pattern], ...]) -> list[Match]:
    """All matches of ``patterns`` on ``graph``; later matches overlapping earlier ones are
    switched off (deterministic: pattern order, then graph order)."""
    owner: dict[str, Match] = {}
    found: list[Match] = []
    for pattern in patterns:
        for match in pattern.match(graph):
            taken = next((owner[n] for n in match.nodes if n in owner), None)
            if taken is not None:
                match.apply = False
                match.skipped = f"overlaps {taken.pattern.__name__} at {taken.anchor}"
            else:
                owner.update(dict.fromkeys(match.nodes, match))
            found.append(match)
    return found


def apply_matches(graph: Graph, matches: list[Match], report: TransformReport) -> int:
    """Rewrite ``graph`` at every enabled match; count into ``report``; return rewrites done."""
    enabled = [m for m in matches if m.apply]
    seen: dict[str, Match] = {}
    for match in enabled:
        for name in match.nodes:
            if name in seen:
                raise PlanError(
                    f"{match.pattern.__name__} and {seen[name].pattern.__name__} both rewrite"
                    f" node {name!r}; switch one of them off (match.apply = False)"
                )
            seen[name] = match
    for match in matches:
        row = report.stats(match.pattern)
        row.matched += 1
        if match.skipped is not None and not match.apply:
            row.skipped_overlap += 1
        elif not match.apply:
            row.skipped_disabled += 1
    done = 0
    for match in enabled:
        missing = [n for n in match.nodes if graph.node(n) is None]
        if missing:
            raise PlanError(
                f"{match.pattern.__name__}: node {missing[0]!r} is not in the model; "
                "plan again on the model you apply it to"
            )
        match.pattern.rewrite(graph, match)
        graph.changed()
        report.stats(match.pattern).applied += 1
        done += 1
    graph.finish()
    return done
