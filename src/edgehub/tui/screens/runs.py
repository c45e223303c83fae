"""The Runs screen: the run history, newest first, filtered by type, runtime, device and
status. Pages of `PAGE` rows are read in a worker and the next page loads as the cursor nears
the end, so the screen opens fast with any number of runs. Enter opens a run; Space marks
up to two runs and ``c`` compares them. Each visit reads the list afresh (the rows shown
stay until the new first page replaces them), and so does a change to the store while the
screen is shown (runs another process records, starts or ends appear without a key press).
``/`` filters the rows by a substring of their name, type, status, device or id (Esc clears
it); j/k, g/G and Home/End move the cursor (`ViTable`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Input, Label, Select

from edgehub.tui.cells import plain
from edgehub.tui.report_key import REPORT_WORKER, report_written, write_report_of
from edgehub.tui.runs_data import FILTER_KEYS, matches, store_stamp
from edgehub.tui.screens.base import HubScreen, move_to_row, row_key
from edgehub.tui.widgets.vi_table import ViTable

if TYPE_CHECKING:
    from edgehub.tracking.records import RunFilter, RunRecord


PAGE = 200
_PROMPTS = {"run_type": "type", "runtime": "runtime", "device": "device", "status": "status"}


class RunsScreen(HubScreen):
    AUTO_FOCUS = "#runs"
    BINDINGS = [
        Binding("enter", "open", "Open", show=True),
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare"),
        Binding("o", "report", "Report"),
        Binding("r", "reload", "Refresh"),
        Binding("slash", "search", "Filter"),
        Binding("escape", "clear_search", "Clear filter", show=False),
    ]
    NAV = "runs"

    def __init__(self, state: Any) -> None:
        from edgehub.tracking.records import RunFilter

        super().__init__(state)
        self._filters = RunFilter(limit=PAGE)
        self._loaded = 0
        self._exhausted = False
        self._pending: tuple[RunFilter, int] | None = None  # the page being read
        self._marked: list[str] = []
        self._records: list[RunRecord] = []  # the pages read so far
        self._search = ""  # the `/` filter, lower case
        self._stamp: tuple[int, ...] | None = None  # the store as last read

    def body(self) -> ComposeResult:
        with Horizontal(id="filters"):
            for key in FILTER_KEYS:
                yield Select([], prompt=f"{_PROMPTS[key]}: any", id=f"filter-{key}", compact=True)
        yield ViTable(cursor_type="row", zebra_stripes=True, id="runs")
        yield Input(
            placeholder="filter: part of a name, type, status or device (Esc clears)",
            id="runs-search",
            compact=True,
        )
        yield Label("reading runs…", id="runs-count", classes="status", markup=False)

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        table.add_column(" ", key="mark", width=1)
        for label in ("run", "status", "started", "type", "name", "runtime", "device", "took"):
            table.add_column(label, key=label)
        self.set_interval(1.0, self._watch_store)

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self.action_reload()  # every visit, the first too (the screen may be built ahead)

    # -- loading ---------------------------------------------------------------------------

    def action_reload(self) -> None:
        self._stamp = store_stamp(self.state.project.store_dir)  # before the read: no change lost
        self._load_choices()
        self._restart()

    def _watch_store(self) -> None:
        """Once a second while shown: read the list again if the store changed (two stats)."""
        if self.is_current and self._stamp != store_stamp(self.state.project.store_dir):
            self.action_reload()

    def _restart(self) -> None:
        self._loaded = 0  # the rows shown stay until the first page comes
        self._exhausted = False
        self._pending = None
        self._next_page()

    def _next_page(self) -> None:
        wanted = (self._filters, self._loaded)
        if self._exhausted or self._pending == wanted:
            return
        self._pending = wanted
        self._load_page(*wanted)

    @work(thread=True, exit_on_error=False, name="page", group="runs-page", exclusive=True)
    def _load_page(self, filters: RunFilter, offset: int) -> tuple[RunFilter, int, list[RunRecord]]:
        from edgehub.ops.runs import list_runs

        return filters, offset, list_runs(self.state.project, replace(filters, offset=offset))

    @work(thread=True, exit_on_error=False, name="choices", group="runs-choices")
    def _load_choices(self) -> dict[str, list[str]]:
        from edgehub.tui.runs_data import filter_choices

        return filter_choices(self.state.project)

    def action_report(self) -> None:
        """Write the HTML report of the marked runs (else the highlighted one); say where."""
        runs = list(self._marked) or [r for r in [self._highlighted()] if r is not None]
        if runs:
            write_report_of(self, runs)

    def worker_done(self, name: str, result: Any) -> None:
        if name == REPORT_WORKER:
            report_written(self, result)
        elif name == "page":
            filters, offset, rows = result
            if (filters, offset) == self._pending == (self._filters, self._loaded):
                self._pending = None
                self._show_page(rows)
        elif name == "choices":
            for key, values in result.items():
                select = self.query_one(f"#filter-{key}", Select)
                current = select.value
                select.set_options([(v, v) for v in values])
                if current in values:
                    select.value = current

    def worker_failed(self, name: str, error: BaseException | None) -> None:
        if name == "page":
            self._pending = None

    def _show_page(self, rows: list[RunRecord]) -> None:
        self._records = rows if self._loaded == 0 else self._records + rows
        self._loaded += len(rows)
        self._exhausted = len(rows) < PAGE
        self._show_rows()
        if self._search:  # the filter looks through every run
            self._next_page()

    def _show_rows(self) -> None:
        """The rows read that match the `/` filter; the cursor stays on its run if listed."""
        table = self.query_one("#runs", DataTable)
        keep = self._highlighted()
        table.clear()
        clock = self.state.clock
        shown = [row for row in self._records if matches(row, self._search)]
        for row in shown:
            table.add_row(
                "●" if row.run_id in self._marked else "",
                *plain(
                    row.run_id[:8],
                    row.status,  # early: still shown on a narrow terminal
                    clock.when(row.started_at),
                    row.run_type,
                    row.name,
                    row.runtime or "-",
                    row.device or "-",
                    clock.took(row.started_at, row.ended_at),
                ),
                key=row.run_id,
            )
        move_to_row(table, keep)
        more = "" if self._exhausted else "+ (more load as you scroll)"
        count = f"{self._loaded}{more} runs"
        if self._search:
            count = f"{len(shown)} of {count} match {self._search!r}"
        self.query_one("#runs-count", Label).update(count)

    @on(DataTable.RowHighlighted, "#runs")
    def _near_end(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row >= event.data_table.row_count - 20:
            self._next_page()

    # -- the `/` filter --------------------------------------------------------------------

    def action_search(self) -> None:
        search = self.query_one("#runs-search", Input)
        search.display = True
        search.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_search":  # else Esc is the app's (out of a field)
            return bool(self._search) or self.query_one("#runs-search", Input).display
        return True

    def action_clear_search(self) -> None:
        search = self.query_one("#runs-search", Input)
        search.value = ""
        search.display = False
        self._search = ""
        self._show_rows()
        self.query_one("#runs", DataTable).focus()

    @on(Input.Changed, "#runs-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self._search = event.value.strip().lower()
        self._show_rows()
        if self._search:
            self._next_page()

    @on(Input.Submitted, "#runs-search")
    def _search_done(self, _: Input.Submitted) -> None:
        self.query_one("#runs", DataTable).focus()  # the filter stays

    @on(Select.Changed)
    def _filter_changed(self, event: Select.Changed) -> None:
        key = (event.select.id or "").removeprefix("filter-")
        if key not in FILTER_KEYS:
            return
        value = None if event.value is Select.NULL else str(event.value)
        change: dict[str, Any] = {key: value}  # one of FILTER_KEYS, all text fields
        filters = replace(self._filters, **change)
        if filters != self._filters:
            self._filters = filters
            self._restart()

    # -- opening and comparing -------------------------------------------------------------

    def _highlighted(self) -> str | None:
        return row_key(self.query_one("#runs", DataTable))

    def action_open(self) -> None:
        from edgehub.tui.screens.run_detail import RunDetailScreen

        run_id = self._highlighted()
        if run_id is not None:
            self.app.push_screen(RunDetailScreen(self.state, run_id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_mark(self) -> None:
        run_id = self._highlighted()
        if run_id is None:
            return
        table = self.query_one("#runs", DataTable)
        if run_id in self._marked:
            self._marked.remove(run_id)
        else:
            self._marked.append(run_id)
            if len(self._marked) > 2:
                dropped = self._marked.pop(0)
                if dropped in {str(k.value) for k in table.rows}:
                    table.update_cell(dropped, "mark", "")
        table.update_cell(run_id, "mark", "●" if run_id in self._marked else "")

    def action_compare(self) -> None:
        from edgehub.tui.screens.compare import CompareScreen

        pair = list(self._marked)
        highlighted = self._highlighted()
        if len(pair) == 1 and highlighted and highlighted not in pair:
            pair.append(highlighted)
        if len(pair) != 2:
            self.notify("mark two runs with Space, then press c", severity="warning", markup=False)
            return
        self.app.push_screen(CompareScreen(self.state, pair[0], pair[1]))
