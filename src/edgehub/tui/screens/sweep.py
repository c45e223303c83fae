"""The Sweep screen: a grid file (or models, devices and option values typed in), launch, and
the grid's table filling in live, a row per cell: status, median and p99 latency, accuracy.

The sweep is `ops.sweep.run_sweep` in a thread worker with a `Cancellation`; each change of a
cell comes back as a `CellChanged` message (no widget is touched from the worker).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Select

from edgehub.errors import EdgehubError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.sweep import CellResult, SweepReport
from edgehub.ops.sweep_grid import SWEEP_STEPS, SweepGrid, build_grid, listed, value_text, vary_pair
from edgehub.tui.cells import plain
from edgehub.tui.report_key import REPORT_WORKER, report_written, write_report_of
from edgehub.tui.screens.base import HubScreen
from edgehub.tui.widgets.field_form import field_row

SWEEP_RUN = "sweep"  # the sweep's key among the state's runs
COLUMNS = ("model", "device", "runtime", "options", "status", "median ms", "p99 ms", "cosine")


@dataclass(eq=False)
class CellChanged(Message):
    cell: CellResult


@dataclass(eq=False)
class SweepEnded(Message):
    status: str
    report: SweepReport | None
    error: str | None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


class SweepScreen(HubScreen):
    AUTO_FOCUS = "#cells"  # never a field: a key pressed on arrival is a shortcut (base)
    BINDINGS = [
        Binding("ctrl+r", "launch", "Launch sweep"),
        Binding("o", "report", "Report"),
    ]
    NAV = "sweep"

    def __init__(self, state: Any) -> None:
        super().__init__(state)
        self.cancel: Cancellation | None = None
        self.sweep_run: str | None = None  # the SWEEP run of the last sweep launched here

    def body(self) -> ComposeResult:
        with Horizontal(id="sweep-body"):
            with VerticalScroll(id="sweep-form"):
                for name, hint in (
                    ("grid-file", "GRID.toml (or fill in below)"),
                    ("models", "a.onnx,b.onnx"),
                    ("devices", "local"),
                    ("runtimes", "onnxruntime"),
                    ("vary", "profile.runs=50,100; compile.precision=fp32,int8"),
                    ("cluster", "ray://HOST:10001 or local:N (empty: here)"),
                ):
                    yield field_row(name, Input(placeholder=hint, id=name, compact=True))
                steps = [(s, s) for s in SWEEP_STEPS]
                step = Select(steps, value="pipeline", allow_blank=False, id="step", compact=True)
                yield field_row("step", step)
                yield Checkbox("resume (skip finished cells)", id="resume", compact=True)
                yield Button("Launch (^r)", variant="primary", id="launch", compact=True)
            with Vertical(id="sweep-grid"):
                yield Label("No sweep yet: give a grid and launch.", id="sweep-status")
                yield DataTable(id="cells", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#cells", DataTable).add_columns(*COLUMNS)
        # hub.toml's [cluster] address, as `hub exec sweep --cluster` alone; empty: here
        self.query_one("#cluster", Input).value = self.state.project.config.cluster.address or ""

    def _text(self, name: str) -> str:
        return self.query_one(f"#{name}", Input).value.strip()

    def grid(self) -> SweepGrid:
        """The grid the form describes (the file first, the fields add to it)."""
        root = self.state.root
        file_text = self._text("grid-file")
        models = map(Path, listed(self._text("models")))
        pairs = filter(None, (p.strip() for p in self._text("vary").split(";")))
        grid = build_grid(
            root / file_text if file_text else None,
            models=[p if p.is_absolute() else root / p for p in models],
            devices=listed(self._text("devices")),
            runtimes=listed(self._text("runtimes")),
            vary=((vary_pair(p) or (p.partition("=")[0].strip(), [])) for p in pairs),
            step=None if file_text else str(self.query_one("#step", Select).value),
        )
        grid.check()  # a pair without values: "sweep option ... has no values"
        return grid

    @on(Button.Pressed, "#launch")
    def action_launch(self) -> None:
        if self.cancel is not None:
            self.notify("a sweep is running; cancel it first (^k)", severity="warning")
            return
        try:
            grid = self.grid()
        except EdgehubError as error:
            self.notify(str(error), severity="error", markup=False)
            return
        table = self.query_one("#cells", DataTable)
        table.clear()
        for cell in grid.cells():
            settings = " ".join(f"{k}={value_text(v)}" for k, v in cell.settings) or "-"
            row = (cell.model.name, cell.device, cell.runtime, settings, "waiting", "-", "-", "-")
            table.add_row(*plain(*row), key=cell.key(grid.step))
        self._status(f"sweep of {table.row_count} cells: running")
        self.cancel = Cancellation()
        self.state.run_started(SWEEP_RUN, self.cancel, f"the sweep of {table.row_count} cells")
        self.app.refresh_bindings()
        resume = self.query_one("#resume", Checkbox).value
        self._run(grid, resume, self.cancel, self._text("cluster") or None)
        self.leave_field()  # launched: the next key is a shortcut, not more text

    @work(thread=True, exit_on_error=False, group="sweep")
    def _run(
        self, grid: SweepGrid, resume: bool, cancel: Cancellation, cluster: str | None
    ) -> None:
        from edgehub.ops.sweep import run_sweep

        def changed(cell: CellResult) -> None:
            self.post_message(CellChanged(CellResult(**cell.to_dict())))

        executor: Any = None

        def sweep() -> SweepReport:
            nonlocal executor
            if cluster is not None:  # the cells as Ray tasks, as `hub exec sweep --cluster`
                from edgehub.cluster import ray_executor

                executor = ray_executor(cluster)
                executor.connect()
            return run_sweep(
                self.state.project,
                grid,
                resume=resume,
                cancel=cancel,
                on_cell=changed,
                executor=executor,
            )

        try:  # an error is shown as a notification
            self.post_message(SweepEnded(*self.ended("sweep", sweep)))
        finally:
            if executor is not None:
                executor.close()

    def on_cell_changed(self, message: CellChanged) -> None:
        cell = message.cell
        table = self.query_one("#cells", DataTable)
        status = f"{cell.status} (earlier)" if cell.reused_from else cell.status
        values = {
            "status": status,
            "median ms": _number(cell.median_ms),
            "p99 ms": _number(cell.p99_ms),
            "cosine": _number(cell.cosine_similarity),
        }
        columns = list(table.columns)
        row = cell.name_key or cell.key  # rows are keyed by device name (cell.key(step))
        for name, value in values.items():  # a column widens to its longest value
            table.update_cell(row, columns[COLUMNS.index(name)], value, update_width=True)
        if cell.status == "FAILED" and cell.error:
            self.notify(f"{cell.label}: {cell.error}", severity="error", markup=False)

    def on_sweep_ended(self, message: SweepEnded) -> None:
        self.cancel = None
        if message.report is not None:
            self.sweep_run = message.report.run_id
        self.state.run_ended(SWEEP_RUN)
        self.app.refresh_bindings()
        table = self.query_one("#cells", DataTable)
        if message.status == "KILLED":
            column = list(table.columns)[COLUMNS.index("status")]
            for key in list(table.rows):
                if table.get_cell(key, column) == "waiting":
                    table.update_cell(key, column, "NOT_STARTED", update_width=True)
        failed = len(message.report.failed) if message.report else 0
        text = f"sweep {message.status}" + (f", {failed} cell(s) failed" if failed else "")
        if message.error:
            text += f": {message.error}"
        self._status(text)
        self.notify(text, severity="information" if message.status == "FINISHED" else "error")

    def action_report(self) -> None:
        """Write the HTML report of the last sweep launched here (`hub runs report --sweep`)."""
        if self.sweep_run is None:
            self.notify(
                "no sweep has ended here yet: launch one (^r), or press o on its SWEEP run in Runs",
                severity="warning",
                markup=False,
            )
        else:
            write_report_of(self, [], sweeps=[self.sweep_run])

    def worker_done(self, name: str, result: Any) -> None:
        if name == REPORT_WORKER:
            report_written(self, result)

    def active_run(self) -> str | None:
        return SWEEP_RUN if self.cancel is not None else None

    def run_cancelling(self, run_id: str) -> None:
        if run_id == SWEEP_RUN:
            self._status("cancelling…")

    def _status(self, text: str) -> None:
        self.query_one("#sweep-status", Label).update(text)
