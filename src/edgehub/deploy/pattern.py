"""Patterns: a match on an ONNX subgraph and a rewrite of it, tagged with the pipeline phase.

A pattern is a class, never instantiated: ``match(graph)`` lists where it applies, and
``rewrite(graph, match)`` changes the graph there. A rewrite must keep the names of the tensors
the matched nodes hand to the rest of the graph, so other planned matches stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import onnx

    from edgehub.deploy.graph import Graph


class Phase(str, Enum):
    """Where a pattern runs: conversions to a fixpoint, then one fusion pass; smooth and
    quantized patterns belong to `quantize`."""

    CONVERSION = "conversion"
    FUSION = "fusion"
    SMOOTH = "smooth"
    QUANTIZED = "quantized"


class PatternPhaseError(UsageError, ValueError):
    """A pattern was handed to a stage that does not run its phase."""


@dataclass
class Match:
    """One place a pattern applies: the nodes it covers (by name, last one is the anchor).

    ``apply`` may be switched off before a plan is applied; ``skipped`` says why the planner
    switched it off. ``observe`` names tensors whose calibration range the rewrite needs (and
    the channel axis, or None for one range per tensor); ``data`` is the pattern's own notes.
    """

    pattern: type[Pattern]
    nodes: tuple[str, ...]
    apply: bool = True
    skipped: str | None = None
    observe: dict[str, int | None] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return self.nodes[-1]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern.__name__,
            "nodes": list(self.nodes),
            "apply": self.apply,
            "skipped": self.skipped,
        }


class Pattern:
    """Base of all patterns. Subclasses set ``phase`` and ``description`` and implement
    ``match_at`` (or ``match``) and ``rewrite``."""

    phase: ClassVar[Phase]
    description: ClassVar[str] = ""

    def __init__(self) -> None:
        raise TypeError("patterns are classes; pass the class, do not instantiate it")

    @classmethod
    def match(cls, graph: Graph) -> list[Match]:
        """Every place in ``graph`` the pattern applies, in node order."""
        found = (cls.match_at(graph, node) for node in list(graph.nodes))
        return [hit for hit in found if hit is not None]

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        """The match anchored at ``node`` (the last node of the subgraph), if any."""
        return None

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        raise NotImplementedError(f"{cls.__name__} does not implement rewrite()")

    @classmethod
    def hit(cls, *nodes: onnx.NodeProto, **data: Any) -> Match:
        """A match over ``nodes`` (in graph order; the last is the anchor)."""
        return Match(cls, tuple(n.name for n in nodes), data=data)


def phase_of(pattern: type[Any]) -> str | None:
    phase = getattr(pattern, "phase", None)
    phase = getattr(phase, "value", phase)
    return None if phase is None else str(phase).lower()


def split_phases(
    patterns: Sequence[type[Any]] | None, phases: tuple[Phase, Phase], stage: str
) -> tuple[tuple[type[Any], ...], tuple[type[Any], ...]]:
    """``patterns`` (None: the active backend's lists for ``phases``) by phase, in order; a
    pattern whose phase ``stage`` does not run is refused in one line."""
    if patterns is None:
        from edgehub.deploy.backend import get_backend

        backend = get_backend()
        first, second = (tuple(getattr(backend, f"{p.value}_patterns")) for p in phases)
        return first, second
    names = {p.value for p in phases}
    chosen = list(patterns)
    for pattern in chosen:
        phase = phase_of(pattern)
        if phase not in names:
            raise PatternPhaseError(
                f"{getattr(pattern, '__name__', pattern)} has phase {phase!r}; {stage} runs "
                f"{' and '.join(sorted(names))} patterns only"
            )
    first, second = (tuple(x for x in chosen if phase_of(x) == p.value) for p in phases)
    return first, second
