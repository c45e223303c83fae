"""`HubScreen`: what every screen of the TUI shares: the project state, and worker results
and errors coming back as messages."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from edgehub.tui.messages import ConfigReloaded
from edgehub.tui.project_state import ProjectState

__all__ = ["HubScreen"]


class HubScreen(Screen[None]):
    """A screen over ``state``. A worker's result goes to `worker_done` (by worker name); a
    worker's error becomes a notification, never a crash."""

    def __init__(self, state: ProjectState) -> None:
        super().__init__()
        self.state = state
        self._seen_generation = state.generation

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR:
            self.notify(
                _one_line(worker.error),
                title=worker.name,
                severity="error",
                timeout=8,
                markup=False,
            )
            self.worker_failed(worker.name, worker.error)
        elif event.state == WorkerState.SUCCESS:
            self.worker_done(worker.name, worker.result)

    def worker_done(self, name: str, result: Any) -> None:
        """Override: a worker called ``name`` returned ``result``."""

    def worker_failed(self, name: str, error: BaseException | None) -> None:
        """Override: a worker called ``name`` raised (already notified)."""

    def on_config_reloaded(self, _: ConfigReloaded) -> None:
        self._seen_generation = self.state.generation
        self.config_reloaded()

    def on_screen_resume(self) -> None:
        if self.state.generation != self._seen_generation:
            self._seen_generation = self.state.generation
            self.config_reloaded()

    def config_reloaded(self) -> None:
        """Override: hub.toml was (re)loaded since this screen last showed it."""


def _one_line(error: BaseException | None) -> str:
    if error is None:
        return "failed"
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
