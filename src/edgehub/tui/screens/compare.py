"""`CompareScreen`: two runs side by side, metrics with their ratio b/a, params and
environment with differences marked; ``d`` shows only what differs."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Label

from edgehub.tui.runs_data import Comparison
from edgehub.tui.screens.base import HubScreen

__all__ = ["CompareScreen"]


class CompareScreen(HubScreen):
    BINDINGS = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("d", "toggle_differences", "Only differences"),
    ]

    def __init__(self, state: Any, run_a: str, run_b: str) -> None:
        super().__init__(state)
        self.run_a = run_a
        self.run_b = run_b
        self.comparison: Comparison | None = None
        self.only_differences = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("comparing…", id="compare-title", classes="screen-title", markup=False)
        yield DataTable(id="compare", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("", "a", "b", "b/a")
        from edgehub.tui.runs_data import compare_runs

        store, a, b = self.state.store(), self.run_a, self.run_b
        self.run_worker(
            lambda: compare_runs(store, a, b), name="compare", thread=True, exit_on_error=False
        )

    def worker_done(self, name: str, result: Any) -> None:
        if name == "compare":
            self.comparison = result
            self._show()

    def action_toggle_differences(self) -> None:
        self.only_differences = not self.only_differences
        self._show()

    def _show(self) -> None:
        comparison = self.comparison
        if comparison is None:
            return
        a, b = comparison.a, comparison.b
        self.query_one("#compare-title", Label).update(
            f"a = {a.run_id[:8]} {a.name} ({a.run_type}, {a.device or '-'})\n"
            f"b = {b.run_id[:8]} {b.name} ({b.run_type}, {b.device or '-'})"
            + ("   [only differences]" if self.only_differences else "")
        )
        table = self.query_one(DataTable)
        table.clear()
        for section, rows in comparison.sections.items():
            shown = [r for r in rows if not self.only_differences or r[1] != r[2]]
            if not shown:
                continue
            table.add_row(f"── {section}", "", "", "")
            table.add_rows(shown)
