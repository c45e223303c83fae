"""`hub-tui`: the app (screens as modes, global keys, quitting safely) and its entry point.

Whatever ends it cancels the runs it launched (`EdgehubApp.on_unmount`), a served session
whose browser tab closed included. Outside edits never end it: a hub.toml that stops loading
is shown in a banner while the last good project stays in use. ^k cancels the run in view from
anywhere but a text field (there it deletes to the end of the line, as in any field); Ctrl-C
offers the same with a confirm, and a second Ctrl-C quits, cancelling every run. Single keys
are shortcuts only outside text fields (see `edgehub.tui.screens.base`); F1 or ? lists the
keys.
"""

from __future__ import annotations

import argparse
import gc
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel

from edgehub.text import visible
from edgehub.tui.clock import Clock
from edgehub.tui.messages import ConfigReloaded
from edgehub.tui.project_state import DiskRead, ProjectState
from edgehub.tui.screen_stock import ScreenStock
from edgehub.tui.screens.base import HubScreen
from edgehub.tui.screens.confirm import ConfirmScreen
from edgehub.tui.screens.devices import DevicesScreen
from edgehub.tui.screens.images import ImagesScreen
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.screens.runs import RunsScreen
from edgehub.tui.screens.sweep import SweepScreen

if TYPE_CHECKING:
    from rich.console import RenderableType


SCREENS = {
    "devices": DevicesScreen,
    "run": RunScreen,
    "runs": RunsScreen,
    "images": ImagesScreen,
    "sweep": SweepScreen,
}


class EdgehubApp(App[int]):
    """Devices, Run, Runs, Images and Sweep, one mode each, over one `ProjectState`."""

    TITLE = "edgehub"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    # Small windows reflow (app.tcss): below 100 columns forms stack above their panes,
    # below 22 rows the title bar goes.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (22, "-tall")]
    BINDINGS = [
        Binding("1", "go('devices')", "Devices", show=False),
        Binding("2,f2", "go('run')", "Run", show=False),
        Binding("3,f3", "go('runs')", "Runs", show=False),
        Binding("4,f4", "go('images')", "Images", show=False),
        Binding("5,f5", "go('sweep')", "Sweep", show=False),
        Binding("q", "request_quit", "Quit", show=False),
        Binding("f1,question_mark", "help", "Help", show=False),  # F1 in a text field too
        Binding("escape", "leave_field", "Leave field", show=False),
        Binding("ctrl+q", "request_quit", "Quit", show=False, priority=True),
        Binding("ctrl+k", "cancel_run", "Cancel run"),  # a text field's ^k is its own
        Binding("ctrl+c", "interrupt", "Cancel run / quit", show=False, priority=True),
    ]

    def __init__(self, config_path: Path | None = None, *, clock: Clock | None = None) -> None:
        super().__init__()
        self.state = ProjectState(config_path, clock)
        self._interrupting = False  # the Ctrl-C confirm is open: a second Ctrl-C quits
        self._reading_config = False  # a worker is reading hub.toml
        self.screens_ahead = ScreenStock(
            self, {name: partial(screen, self.state) for name, screen in SCREENS.items()}
        )
        for name in SCREENS:
            self.add_mode(name, partial(self.screens_ahead.take, name))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification (the screens' too): plain text (``markup=False``), which often
        quotes an error or a device's words, is shown with its control characters escaped."""
        if not markup:
            message, title = visible(message, lines=True), visible(title)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def on_mount(self) -> None:
        from edgehub.core.runtimes import runtime_names

        # The runtime registry's entry points (their imports, once) before the first
        # paint: the Run screen lists them and may be asked for as soon as that paint is done.
        # (On a thread meanwhile, it held the first paint back on a busy machine: bench_tui.py (a).)
        runtime_names()
        self._stop_on_signals()
        self.sub_title = self.state.shown_path
        self.switch_mode("devices")
        self.set_interval(1.0, self._watch_config)
        self.call_after_refresh(self._start_building_ahead)  # once the first screen is painted
        if self.state.path is None:
            where = self.state.init_dir
            self.push_screen(
                ConfirmScreen(f"No hub.toml here. Create one in {where}?", yes="Create"),
                self._create_config,
            )

    def exit(
        self, result: Any = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        """End the app; once the screen being built ahead, if any, is mounted."""
        if not self.screens_ahead.hold(partial(super().exit, result, return_code, message)):
            super().exit(result, return_code, message)

    def _start_building_ahead(self) -> None:
        self.run_worker(self._build_ahead(), name="screens ahead", exit_on_error=False)

    async def _build_ahead(self) -> None:
        """Build the screens not shown yet, the most costly first."""
        for screen in self.screen_stack:
            self.screens_ahead.styled(screen)
        gc.freeze()  # what start-up made (modules, the first screen) stays: see below
        try:
            await self.screens_ahead.build_ahead(["run", "images", "runs", "sweep"])
        except Exception as error:  # never the end of the app: the screens build when asked
            self.show_unexpected("building screens ahead", error)
        # The app's widgets live as long as it does: out of the garbage collector's way (a full
        # collection walked them all at whatever key press it fell on: bench_tui.py (a2), (b)).
        gc.freeze()

    def _stop_on_signals(self) -> None:
        """SIGTERM (``kill``, ``timeout``, systemd) and SIGHUP (the SSH session dropped) end
        the app as quitting does, so its runs are cancelled on the way out (`on_unmount`);
        the exit status is 128 + the signal's number."""
        import asyncio
        import signal

        loop = asyncio.get_running_loop()
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                loop.add_signal_handler(signum, partial(self.exit, None, 128 + signum))

    def on_unmount(self) -> None:
        """However the app ends (quit, Ctrl-C, a served tab closed: textual-serve tells the
        session to quit, an error), no run it launched goes on: each is cancelled (recorded
        KILLED, its container removed, its device lease freed) before the process ends."""
        self.state.cancel_all()
        gc.unfreeze()  # collectable again once the app is gone

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual holds every paint a moment when it switches modes, to hide a screen
        still being built; `action_go` switches only to a screen built already."""

    def _create_config(self, create: bool | None) -> None:
        if not create:
            return
        from edgehub.errors import EdgehubError
        from edgehub.ops.devices import init_project

        try:
            path = init_project(self.state.init_dir)
        except EdgehubError as error:
            self.notify(str(error), severity="error", markup=False)
            return
        self.state.use_file(path)
        self.sub_title = self.state.shown_path
        self.screen.post_message(ConfigReloaded())
        self.notify(f"created {path}", markup=False)

    def _watch_config(self) -> None:
        """Once a second: hub.toml is read and checked on a worker thread (`_read_config`),
        never on the UI loop; what it found comes back to `_take_config`."""
        if not self._reading_config:
            self._reading_config = True
            self.run_worker(self._read_config, name="hub.toml", thread=True, exit_on_error=False)

    def _read_config(self) -> None:
        try:
            read = self.state.read_disk()
        except Exception as error:  # a watcher never ends the app: shown and logged
            self.call_from_thread(self._take_config, None, error)
            return
        self.call_from_thread(self._take_config, read)

    def _take_config(self, read: DiskRead | None, error: Exception | None = None) -> None:
        self._reading_config = False
        try:
            if read is not None:
                self._load_outside_edit(read)
        except Exception as failure:
            error = failure
        if error is not None:  # a watcher never ends the app: shown and logged
            self.show_unexpected("watching hub.toml", error)

    def show_unexpected(self, where: str, error: BaseException) -> None:
        from edgehub.tui.error_log import record_error

        log = record_error(self.state.project.store_dir, where, error)
        told = f" (traceback in {log})" if log else ""
        self.notify(
            f"{where}: {type(error).__name__}: {error}{told}",
            severity="error",
            timeout=15,
            markup=False,
        )

    def _handle_exception(self, error: Exception) -> None:
        """An exception nothing caught ends the app (status 1): log it and stop the runs
        first, so none is left going. Once the app is closing, a screen still being built
        ahead finds its widgets gone (`NoMatches`, `MountError`): no failure."""
        from textual.css.query import NoMatches
        from textual.widget import MountError

        from edgehub.tui.error_log import record_error

        if not self.is_running and isinstance(error, (NoMatches, MountError)):
            return
        record_error(self.state.project.store_dir, "hub-tui", error)
        self.state.cancel_all()
        super()._handle_exception(error)

    def _load_outside_edit(self, read: DiskRead) -> None:
        outcome = self.state.take(read)
        if outcome == "same":
            return
        if outcome in ("missing", "error") and isinstance(self.screen, HubScreen):
            self.screen.show_config_error()
        if outcome == "kept":
            self.notify(
                "hub.toml changed on disk; your unsaved edits are kept and will not overwrite "
                "it (press r on Devices to load the new file and drop them)",
                severity="warning",
                timeout=10,
                markup=False,
            )
        elif outcome == "error":
            self.notify(
                f"hub.toml changed on disk and does not load; the last good version stays in "
                f"use: {self.state.config_error}",
                severity="error",
                timeout=10,
                markup=False,
            )
        elif outcome == "reloaded":
            self.screen.post_message(ConfigReloaded())
            self.notify("hub.toml changed on disk: reloaded", markup=False)

    # -- cancelling runs -------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":
            return bool(self.state.runs)  # in the footer only while a run goes
        return True

    def _hub_screen(self) -> HubScreen | None:
        stack = reversed(self.screen_stack)
        return next((screen for screen in stack if isinstance(screen, HubScreen)), None)

    def _run_to_cancel(self) -> str | None:
        """The run in view, else the only one going."""
        screen = self._hub_screen()
        target = screen.active_run() if screen is not None else None
        if target is None and len(self.state.runs) == 1:
            target = next(iter(self.state.runs))
        return target

    def action_cancel_run(self) -> None:
        target = self._run_to_cancel()
        if target is None:
            self.notify(
                f"{len(self.state.runs)} runs going: show the one to stop (Run, 2) and press ^k",
                severity="warning",
                markup=False,
            )
            return
        self._cancel(target)

    def _cancel(self, run_id: str) -> None:
        cancel = self.state.runs.get(run_id)
        if cancel is None:
            return  # it ended meanwhile
        cancel.cancel()
        screen = self._hub_screen()
        if screen is not None:
            screen.run_cancelling(run_id)
        self.notify(f"cancelling {self.state.run_titles.get(run_id, run_id)}…", markup=False)

    def action_interrupt(self) -> None:
        """Ctrl-C: cancel the run in view (after a confirm); pressed again, quit."""
        if self._interrupting:
            self.state.cancel_all()
            self.exit(130, return_code=130)  # as a shell reports an interrupt
            return
        if not self.state.runs:
            self.action_request_quit()
            return
        target = self._run_to_cancel()
        if target is None:
            question = f"Cancel all {len(self.state.runs)} runs?"
        else:
            question = f"Cancel {self.state.run_titles.get(target, target)}?"

        def answer(yes: bool | None) -> None:
            self._interrupting = False
            if not yes:
                return
            for run_id in [target] if target is not None else list(self.state.runs):
                self._cancel(run_id)

        self._interrupting = True
        self.push_screen(
            ConfirmScreen(
                f"{question}\n(Ctrl-C again: quit, cancelling every run)",
                yes="Cancel run",
                no="Keep running",
            ),
            answer,
        )

    async def action_go(self, mode: str) -> None:
        """Show ``mode``'s screen, once built (the current one stays in view meanwhile)."""
        if self.current_mode != mode:
            await self.screens_ahead.build(mode)
            self.switch_mode(mode)

    def action_help(self) -> None:
        """The keys of the screen in view, then the keys that work everywhere."""
        from edgehub.tui.screens.help import HelpScreen, key_rows

        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        name = type(screen).__name__.removesuffix("Screen")
        sections = {
            f"{name} screen": key_rows(type(screen).BINDINGS),
            "everywhere": key_rows(self.BINDINGS),
        }
        self.push_screen(HelpScreen(f"the {name} screen", sections))

    def action_leave_field(self) -> None:
        """Escape out of a text field, so the single-key bindings work again."""
        self.screen.set_focus(None)

    def action_request_quit(self) -> None:
        running = len(self.state.runs)
        reasons = []
        if self.state.dirty:
            reasons.append("hub.toml has unsaved edits")
        if running:
            reasons.append(f"{running} run(s) in progress will be cancelled")
        if not reasons:
            self.exit(0)
            return
        self._interrupting = True  # Ctrl-C there quits too
        self.push_screen(
            ConfirmScreen("Quit? " + "; ".join(reasons) + ".", yes="Quit"), self._quit_answer
        )

    def _quit_answer(self, quit_now: bool | None) -> None:
        self._interrupting = False
        if quit_now:
            self.state.cancel_all()
            self.exit(0)


class _OneLineErrors(argparse.ArgumentParser):
    """Usage errors in one line (no usage dump), exit 2, as `hub` gives them."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}; see '{self.prog} --help'", file=sys.stderr)
        sys.exit(2)


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port: give 1-65535, or 0 for any free one"
        )
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineErrors(prog="hub-tui", description="edgehub's terminal UI")
    parser.add_argument("--config", type=Path, help="hub.toml to use (default: the nearest)")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the UI to a browser on 127.0.0.1; open the URL it prints (it holds a "
        "secret token)",
    )
    parser.add_argument(
        "--port", type=_port, default=8000, help="port for --serve (8000; 0: any free one)"
    )
    return parser


def _need_terminal() -> None:
    """Textual's terminal driver reads keys from stdin and draws on stderr: without a terminal
    on both (``ssh host hub-tui`` without ``-t``, ``hub-tui </dev/null &``) it would spin on a
    dead input forever, so refuse up front. A session textual-serve starts (``--serve``) names
    its own driver in ``TEXTUAL_DRIVER`` and needs no terminal."""
    import os

    from edgehub.errors import UsageError

    if os.environ.get("TEXTUAL_DRIVER"):
        return
    missing = [
        name
        for name, stream in (("input", sys.__stdin__), ("output", sys.__stderr__))
        if stream is None or not stream.isatty()
    ]
    if missing:
        which = " and ".join(missing) + (" is not one" if len(missing) == 1 else " are not")
        raise UsageError(
            f"needs a terminal, but its {which}: run it in one (over SSH: ssh -t HOST hub-tui), "
            "or serve it to a browser with 'hub-tui --serve'"
        )


def run(argv: list[str] | None = None) -> int:
    """The ``hub-tui`` console script."""
    from edgehub.errors import EdgehubError

    args = _parser().parse_args(argv)
    try:
        if args.serve:
            from edgehub.tui.serve import serve

            ProjectState(args.config)  # a broken hub.toml: one line now, not a dead session later
            return serve(args.config, args.port)
        _need_terminal()
        app = EdgehubApp(args.config)
    except EdgehubError as error:
        print(f"hub-tui: {visible(str(error))}", file=sys.stderr)
        return error.exit_code
    code = app.run()
    if isinstance(code, int):
        return code
    return app.return_code or 0  # 1 after an error that ended the app
