"""`CompareScreen`: two runs side by side as `hub runs compare` compares them (`ops.runs`):
latency or accuracy deltas where measured, metrics with their ratio b/a, params and
environment with differences marked; ``d`` shows only what differs.

What decides comes first: NOT COMPARABLE with its reasons, then the verdict. Cells are
elided to fit the screen's width, so columns b and b/a always show; the highlighted row's full
values are shown below the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Label, Static

from edgehub.text import visible
from edgehub.tui.cells import plain
from edgehub.tui.report_key import REPORT_WORKER, report_written, write_report_of
from edgehub.tui.runs_data import Row, comparison_sections, verdict_lines
from edgehub.tui.screens.base import HubScreen

if TYPE_CHECKING:
    from edgehub.ops.runs import Comparison


class CompareScreen(HubScreen):
    BINDINGS = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("d", "toggle_differences", "Only differences"),
        Binding("o", "report", "Report"),
    ]

    def __init__(self, state: Any, run_a: str, run_b: str) -> None:
        super().__init__(state)
        self.run_a = run_a
        self.run_b = run_b
        self.comparison: Comparison | None = None
        self._rows: dict[str, Row] = {}  # full values by row key
        self.only_differences = False

    def body(self) -> ComposeResult:
        yield Label("comparing…", id="compare-title", classes="screen-title", markup=False)
        yield DataTable(id="compare", cursor_type="row", zebra_stripes=True)
        yield Static("", id="compare-full", markup=False)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("", "a", "b", "b/a")
        from edgehub.ops.runs import compare_runs

        project, a, b = self.state.project, self.run_a, self.run_b
        self.in_thread("compare", lambda: compare_runs(project, a, b, strict=False))

    def worker_done(self, name: str, result: Any) -> None:
        if name == "compare":
            self.comparison = result
            self._show()
        elif name == REPORT_WORKER:
            report_written(self, result)

    def action_report(self) -> None:
        """Write the HTML report of the two runs (`hub runs report A B`); say where."""
        write_report_of(self, [self.run_a, self.run_b])

    def on_resize(self) -> None:
        self._show()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = self._rows.get(str(event.row_key.value)) if event.row_key else None
        full = self.query_one("#compare-full", Static)
        shown = [] if row is None else [visible(str(value)) for value in row]
        full.update(f"{shown[0]}\n a: {shown[1]}\n b: {shown[2]}  {shown[3]}" if shown else "")

    def action_toggle_differences(self) -> None:
        self.only_differences = not self.only_differences
        self._show()

    def _show(self) -> None:
        comparison = self.comparison
        if comparison is None:
            return
        lines = [visible(line) for line in verdict_lines(comparison)]
        lines += [
            visible(f"{side} = {run.run_id[:8]} {run.name} ({run.run_type}, {run.device or '-'})")
            for side, run in (("a", comparison.a), ("b", comparison.b))
            if run is not None
        ]
        if self.only_differences:
            lines[-1] += "   [only differences]"
        self.query_one("#compare-title", Label).update("\n".join(lines))
        table = self.query_one(DataTable)
        table.clear()
        self._rows = {}
        sections = comparison_sections(comparison)
        widths = _widths(self.size.width or 80, sections)
        for section, rows in sections.items():
            shown = [r for r in rows if not self.only_differences or r[1] != r[2]]
            if not shown:
                continue
            table.add_row(f"── {section}", "", "", "")
            for row in shown:
                key = f"{section}/{row[0]}"
                while key in self._rows:  # `$name` and `name` both shown as `name`
                    key += "'"
                self._rows[key] = row
                cells = (_elide(v, w) for v, w in zip(row, widths, strict=True))
                table.add_row(*plain(*cells), key=key)


def _widths(screen: int, sections: dict[str, list[Row]]) -> tuple[int, int, int, int]:
    """Column widths that fit ``screen`` columns: the key as needed up to a cap, a and b at
    least 10 each, the note the rest."""
    rows = [r for rows in sections.values() for r in rows]
    key = min(26, max((len(r[0]) for r in rows), default=8) + 3)
    need = max((len(r[3]) for r in rows), default=3)
    room = screen - key - 10  # 2 columns of padding per cell, and the scrollbar
    side = max(10, (room - need) // 2)
    return key, side, side, max(3, min(need, room - 2 * side))


def _elide(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"
