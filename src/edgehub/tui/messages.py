"""The messages thread workers post back to the UI (no widget is touched from a thread)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from edgehub.ops.eval import EvalReport
    from edgehub.ops.reports import PipelineReport, RunReport

__all__ = ["BuildProgress", "ConfigReloaded", "LinesReady", "RunEnded"]


class LinesReady(Message):
    """A run pane's buffer has lines to show (one per drain, however many lines)."""

    def __init__(self, pane_id: str) -> None:
        super().__init__()
        self.pane_id = pane_id

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LinesReady) and message.pane_id == self.pane_id


class RunEnded(Message):
    """A launched run returned: its status, its report, or the error that ended it."""

    def __init__(
        self,
        pane_id: str,
        status: str,
        report: RunReport | PipelineReport | EvalReport | None = None,
        error: str | None = None,
    ) -> None:
        super().__init__()
        self.pane_id = pane_id
        self.status = status
        self.report = report
        self.error = error


class BuildProgress(Message):
    """A step of an image build."""

    def __init__(self, runtime: str, label: str, step: int, steps: int) -> None:
        super().__init__()
        self.runtime = runtime
        self.label = label
        self.step = step
        self.steps = steps


class ConfigReloaded(Message):
    """hub.toml was loaded again (changed on disk, created, or saved)."""
