"""What a transform or quantization did: per pattern counts and the graph size before/after."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    import onnx

    from edgehub.deploy.pattern import Pattern


@dataclass
class PatternStats:
    """Counts for one pattern: places matched, rewrites applied, matches skipped because an
    earlier match covered the same nodes, matches switched off by the user."""

    name: str
    phase: str
    description: str
    matched: int = 0
    applied: int = 0
    skipped_overlap: int = 0
    skipped_disabled: int = 0


@dataclass
class TransformReport:
    """Per pattern stats (in the order the patterns ran) and node counts before and after."""

    patterns: list[PatternStats] = field(default_factory=list)
    nodes_before: int = 0
    nodes_after: int = 0
    ops_before: dict[str, int] = field(default_factory=dict)
    ops_after: dict[str, int] = field(default_factory=dict)
    conversion_rounds: int = 0
    converged: bool = True
    backend: str | None = None

    @classmethod
    def starting(cls, model: onnx.ModelProto, patterns: Iterable[type[Pattern]]) -> TransformReport:
        """The report on ``model`` before any rewrite: its size, and a row for every pattern in
        run order (even one that never matches)."""
        report = cls(nodes_before=len(model.graph.node), ops_before=_ops(model))
        for pattern in patterns:
            report.stats(pattern)
        return report

    def stats(self, pattern: type[Pattern]) -> PatternStats:
        """The row for ``pattern``, added on first use."""
        for row in self.patterns:
            if row.name == pattern.__name__:
                return row
        row = PatternStats(pattern.__name__, pattern.phase.value, pattern.description)
        self.patterns.append(row)
        return row

    def fired(self) -> dict[str, int]:
        """Pattern name -> rewrites applied, for the patterns that applied at least once."""
        return {row.name: row.applied for row in self.patterns if row.applied}

    def set_after(self, model: onnx.ModelProto) -> None:
        self.nodes_after, self.ops_after = len(model.graph.node), _ops(model)

    def summary(self) -> str:
        """One line: node counts and the patterns that fired."""
        fired = ", ".join(f"{name} x{count}" for name, count in self.fired().items()) or "none"
        return f"nodes {self.nodes_before} -> {self.nodes_after}; applied: {fired}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ops(model: onnx.ModelProto) -> dict[str, int]:
    return dict(sorted(Counter(n.op_type for n in model.graph.node).items()))
