"""The messages thread workers post back to the UI (no widget is touched from a thread)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from edgehub.ops.eval import EvalReport
    from edgehub.ops.reports import PipelineReport, RunReport


@dataclass(eq=False)
class LinesReady(Message):
    """A run pane's buffer has lines to show (one per drain, however many lines)."""

    pane_id: str

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LinesReady) and message.pane_id == self.pane_id


@dataclass(eq=False)
class RunEnded(Message):
    """A launched run returned: its status, its report, or the error that ended it."""

    pane_id: str
    status: str
    report: RunReport | PipelineReport | EvalReport | None = None
    error: str | None = None


@dataclass(eq=False)
class BuildProgress(Message):
    """A step of an image build."""

    runtime: str
    label: str
    step: int
    steps: int


class ConfigReloaded(Message):
    """hub.toml was loaded again (changed on disk, created, or saved)."""
