"""`HubScreen`: what every screen of the TUI shares: the project state, a banner while
hub.toml on disk does not load, the run that cancel keys stop, worker results and errors
coming back as messages, and where the keyboard goes.

Keys and text fields: a key typed while a text field has focus is text (the field takes every
printable key before any single-key shortcut sees it), so a field holds focus only while the
user chose to type there (Tab, a click, an editor dialog opening on it). Showing a screen
(switching to it, or back from a dialog) and launching what a form describes take focus out of
the field, as Escape does: the next ``3`` or ``q`` is a shortcut, never text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.screen import Screen
from textual.widgets import DataTable, Header, Input
from textual.worker import Worker, WorkerState

from edgehub.errors import EdgehubError
from edgehub.tui.messages import ConfigReloaded
from edgehub.tui.project_state import ProjectState
from edgehub.tui.widgets.config_banner import ConfigBanner, banner_text
from edgehub.tui.widgets.hub_footer import HubFooter
from edgehub.tui.widgets.nav_bar import NavBar

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import ComposeResult


TEXT_FIELDS = (Input,)  # the widgets that take printable keys as text (no TextArea here)


class HubScreen(Screen[None]):
    """A screen over ``state``. A worker's result goes to `worker_done` (by worker name); a
    worker's error becomes a notification (an unexpected one is also logged), never a crash."""

    NAV: str | None = None  # the screen's name in the `NavBar` (None: no bar, a screen pushed)

    def __init__(self, state: ProjectState) -> None:
        super().__init__()
        self.state = state
        self._seen_generation = state.generation
        self._completed = False  # `build_later` has run (or is running)

    def compose(self) -> ComposeResult:
        """The frame of every screen: the header, the `NavBar`, the screen's `body`, the footer."""
        yield Header()
        if self.NAV is not None:
            yield NavBar(self.NAV)
        yield from self.body()
        yield HubFooter()

    def body(self) -> ComposeResult:
        """Override: what the screen shows between its header (and `NavBar`) and footer."""
        yield from ()

    def in_thread(self, name: str, work: Callable[[], Any], **options: Any) -> None:
        """Run ``work`` in a thread worker called ``name``: its result goes to `worker_done`,
        its error to `worker_failed`."""
        self.run_worker(work, name=name, thread=True, exit_on_error=False, **options)

    def ended(self, where: str, work: Callable[[], Any]) -> tuple[str, Any, str | None]:
        """Run ``work`` (a launched run, in its worker) to its end, for the worker to post:
        (its ``status``, it, None); cancelled: ("KILLED", None, "cancelled"); failed: ("FAILED",
        None, why), an unexpected error also logged as ``where``."""
        from edgehub.errors import OperationCancelled

        try:
            result = work()
        except OperationCancelled:
            return "KILLED", None, "cancelled"
        except Exception as error:  # the caller shows it
            if not isinstance(error, EdgehubError):
                self.log_unexpected(where, error)
            return "FAILED", None, str(error) or type(error).__name__
        return getattr(result, "status", "FINISHED"), result, None

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR:
            if worker.error is not None and not isinstance(worker.error, EdgehubError):
                self.log_unexpected(worker.name, worker.error)
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

    def log_unexpected(self, where: str, error: BaseException) -> None:
        """Keep ``error``'s traceback in the store's tui.log (it is shown by the caller)."""
        from edgehub.tui.error_log import record_error

        record_error(self.state.project.store_dir, where, error)

    def on_config_reloaded(self, _: ConfigReloaded) -> None:
        self._seen_generation = self.state.generation
        self.show_config_error()
        self.config_reloaded()

    def on_screen_resume(self) -> None:
        self.leave_field()  # after Textual's auto focus, which may have picked a field
        self.show_config_error()
        if self.state.generation != self._seen_generation:
            self._seen_generation = self.state.generation
            self.config_reloaded()
        if not self._completed:
            self.call_after_refresh(self.complete)  # once the screen's first frame is drawn

    async def complete(self) -> None:
        """Build the part of the screen that `build_later` adds, once."""
        if not self._completed:
            self._completed = True
            await self.build_later()

    async def build_later(self) -> None:
        """Override: what the screen may show a moment after its first frame, built in a slice
        of its own (when the screen is built ahead, else right after its first frame)."""

    def show_config_error(self) -> None:
        """Show, update or remove the banner saying hub.toml on disk does not load."""
        error = self.state.config_error
        banners = self.query(ConfigBanner)
        if error is None:
            banners.remove()
            return
        text = banner_text(error, gone=self.state.config_gone)
        if banners:
            banners.first().update(text)
        else:
            self.mount(ConfigBanner(text, markup=False), before=0)

    def leave_field(self) -> None:
        """Take focus out of the text field that has it, if any (the shortcuts work again)."""
        if isinstance(self.focused, TEXT_FIELDS):
            self.set_focus(None)

    def active_run(self) -> str | None:
        """Override: the run the cancel keys stop on this screen (the one in view)."""
        return None

    def run_cancelling(self, run_id: str) -> None:
        """Override: ``run_id`` was told to stop."""

    def config_reloaded(self) -> None:
        """Override: hub.toml was (re)loaded since this screen last showed it."""


def row_key(table: DataTable[Any]) -> str | None:
    """The key of ``table``'s highlighted row; None while it has no rows."""
    if table.row_count == 0:
        return None
    return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)


def move_to_row(table: DataTable[Any], key: str | None) -> None:
    """Put ``table``'s cursor on the row keyed ``key``, where there is one."""
    if key is not None and key in {str(k.value) for k in table.rows}:
        table.move_cursor(row=table.get_row_index(key))


def _one_line(error: BaseException | None) -> str:
    if error is None:
        return "failed"
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
