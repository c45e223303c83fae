"""The Images screen: each runtime's pinned image, built or not, its digest and size; ``b``
builds the highlighted runtime's image with a progress bar and the build's step lines. The
images are listed (from Docker, in a worker) at each visit and on ``r``."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Label, Log, ProgressBar

from edgehub.text import visible
from edgehub.tui.messages import BuildProgress
from edgehub.tui.screens.base import HubScreen, row_key


def _size(size: int | None) -> str:
    return f"{size / 1e6:.0f} MB" if size else "-"


class ImagesScreen(HubScreen):
    AUTO_FOCUS = "#images"
    BINDINGS = [Binding("b", "build", "Build"), Binding("r", "refresh_images", "Refresh")]
    NAV = "images"

    def __init__(self, state: Any) -> None:
        super().__init__(state)
        self.building: str | None = None

    def body(self) -> ComposeResult:
        yield Label(
            "Toolchain images (the tag follows the Dockerfile and lock file)",
            classes="screen-title",
            markup=False,
        )
        yield DataTable(id="images", cursor_type="row", zebra_stripes=True)
        yield Label("", id="build-status", classes="status", markup=False)
        # determinate until a build starts: an indeterminate bar animates (15 frames a
        # second) even while hidden
        yield ProgressBar(total=1, show_eta=False, id="build-progress")
        yield Log(id="build-log", max_lines=500)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(
            "runtime", "tag", "built", "digest", "size", "created"
        )
        self.query_one("#build-progress").display = False

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self.action_refresh_images()

    def action_refresh_images(self) -> None:
        self.in_thread("list", _image_rows, group="list", exclusive=True)

    def worker_done(self, name: str, result: Any) -> None:
        if name == "list":
            self._show(result)
        elif name == "build":
            self.building = None
            self.query_one("#build-progress", ProgressBar).update(total=1, progress=1)  # done
            built = result[0]
            self.query_one("#build-status", Label).update(
                f"built {built.tag} in {built.seconds:.0f}s (log: {built.log_path})"
            )
            self.action_refresh_images()

    def worker_failed(self, name: str, error: BaseException | None) -> None:
        if name == "build":
            self.building = None
            bar = self.query_one("#build-progress", ProgressBar)
            bar.update(total=1, progress=0)  # no bar animating on
            bar.display = False
            self.query_one("#build-status", Label).update(visible(f"build failed: {error}"))
            for line in getattr(error, "log_tail", []):
                self.query_one("#build-log", Log).write_line(visible(line, lines=True))

    def _show(self, statuses: list[Any]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for status in statuses:
            if isinstance(status, str):
                table.add_row(status, "-", "no image yet", "-", "-", "-", key=status)
                continue
            table.add_row(
                status.runtime,
                status.tag,
                "yes" if status.built else "no",
                (status.digest or status.image_id or "-")[:19],
                _size(status.size_bytes),
                (status.created or "-")[:19],
                key=status.runtime,
            )

    def action_build(self) -> None:
        runtime = row_key(self.query_one(DataTable))
        if runtime is None or self.building:
            return
        self.building = runtime
        bar = self.query_one("#build-progress", ProgressBar)
        bar.update(total=None, progress=0)  # until the build says how many steps
        bar.display = True
        self.query_one("#build-status", Label).update(f"building {runtime}…")
        self._build(runtime)

    @work(thread=True, exit_on_error=False, name="build", group="build")
    def _build(self, runtime: str) -> list[Any]:
        from edgehub.ops.images import build_images

        def progress(runtime: str, label: str, step: int, steps: int) -> None:
            self.post_message(BuildProgress(runtime, label, step, steps))

        return build_images(self.state.project, [runtime], progress=progress)

    def on_build_progress(self, message: BuildProgress) -> None:
        self.query_one("#build-log", Log).write_line(visible(message.label, lines=True))
        bar = self.query_one("#build-progress", ProgressBar)
        if message.steps:
            bar.update(total=message.steps, progress=message.step)
            self.query_one("#build-status", Label).update(
                f"building {message.runtime}: step {message.step}/{message.steps}"
            )


def _image_rows() -> list[Any]:
    """Every runtime: its image status, or its name alone when it has no image (yet)."""
    from edgehub.core.runtimes import runtime_names
    from edgehub.ops.images import list_images

    statuses: list[Any] = list(list_images())
    imaged = {status.runtime for status in statuses}
    return statuses + [name for name in runtime_names() if name not in imaged]
