"""`hub-tui`: the app (screens as modes, global keys, quitting safely) and its entry point."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import NoReturn

from textual.app import App
from textual.binding import Binding

from edgehub.tui.clock import Clock
from edgehub.tui.messages import ConfigReloaded
from edgehub.tui.project_state import ProjectState
from edgehub.tui.screens.confirm import ConfirmScreen
from edgehub.tui.screens.devices import DevicesScreen
from edgehub.tui.screens.images import ImagesScreen
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.screens.runs import RunsScreen
from edgehub.tui.screens.sweep import SweepScreen

__all__ = ["EdgehubApp", "run"]

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
    BINDINGS = [
        Binding("1,f1", "go('devices')", "Devices", show=False),
        Binding("2,f2", "go('run')", "Run", show=False),
        Binding("3,f3", "go('runs')", "Runs", show=False),
        Binding("4,f4", "go('images')", "Images", show=False),
        Binding("5,f5", "go('sweep')", "Sweep", show=False),
        Binding("q", "request_quit", "Quit", show=False),
        Binding("escape", "leave_field", "Leave field", show=False),
        Binding("ctrl+q", "request_quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, config_path: Path | None = None, *, clock: Clock | None = None) -> None:
        super().__init__()
        self.state = ProjectState(config_path, clock)
        for name, screen in SCREENS.items():
            self.add_mode(name, partial(screen, self.state))

    def on_mount(self) -> None:
        self.sub_title = self._subtitle()
        self.switch_mode("devices")
        self.set_interval(1.0, self._watch_config)
        if self.state.path is None:
            where = self.state.init_dir
            self.push_screen(
                ConfirmScreen(f"No hub.toml here. Create one in {where}?", yes="Create"),
                self._create_config,
            )

    def _subtitle(self) -> str:
        return self.state.shown_path

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
        self.sub_title = self._subtitle()
        self.screen.post_message(ConfigReloaded())
        self.notify(f"created {path}", markup=False)

    def _watch_config(self) -> None:
        if not self.state.disk_changed():
            return
        if self.state.dirty:
            self.notify(
                "hub.toml changed on disk; your unsaved edits are kept and will not overwrite "
                "it (press r on Devices to load the new file and drop them)",
                severity="warning",
                timeout=10,
                markup=False,
            )
            return
        self.state.reload()
        self.screen.post_message(ConfigReloaded())
        self.notify("hub.toml changed on disk: reloaded", markup=False)

    def action_go(self, mode: str) -> None:
        if self.current_mode != mode:
            self.switch_mode(mode)

    def action_leave_field(self) -> None:
        """Escape out of a text field, so the single-key bindings work again."""
        self.screen.set_focus(None)

    def action_request_quit(self) -> None:
        running = self.state.running_count()
        reasons = []
        if self.state.dirty:
            reasons.append("hub.toml has unsaved edits")
        if running:
            reasons.append(f"{running} run(s) in progress will be cancelled")
        if not reasons:
            self.exit(0)
            return
        self.push_screen(
            ConfirmScreen("Quit? " + "; ".join(reasons) + ".", yes="Quit"), self._quit_answer
        )

    def _quit_answer(self, quit_now: bool | None) -> None:
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


def run(argv: list[str] | None = None) -> int:
    """The ``hub-tui`` console script."""
    from edgehub.errors import EdgehubError

    args = _parser().parse_args(argv)
    try:
        if args.serve:
            from edgehub.tui.serve import serve

            ProjectState(args.config)  # a broken hub.toml: one line now, not a dead session later
            return serve(args.config, args.port)
        app = EdgehubApp(args.config)
    except EdgehubError as error:
        print(f"hub-tui: {error}", file=sys.stderr)
        return error.exit_code
    code = app.run()
    return code if isinstance(code, int) else 0
