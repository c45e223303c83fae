"""`RunDetailScreen`: one run's metrics, params, artifacts, environment, log and, for profile
runs, the histogram of its raw latency samples and the conditions its loop ran under; for EVAL
runs, an accuracy tab first."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Label, Log, TabbedContent, TabPane

from edgehub.text import visible
from edgehub.tui.accuracy_data import Accuracy
from edgehub.tui.cells import plain
from edgehub.tui.runs_data import RunDetail, percentile_lines
from edgehub.tui.screens.base import HubScreen
from edgehub.tui.widgets.latency_histogram import LatencyHistogram

_TABLES = ("metrics", "params", "artifacts", "environment")


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


class RunDetailScreen(HubScreen):
    BINDINGS = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("l", "toggle_log", "Log scale"),
    ]

    def __init__(self, state: Any, run_id: str) -> None:
        super().__init__(state)
        self.run_id = run_id

    def body(self) -> ComposeResult:
        yield Label(
            f"run {self.run_id[:8]}: loading…", id="run-title", classes="screen-title", markup=False
        )
        with TabbedContent(id="run-tabs"):
            with TabPane("latency", id="tab-latency"):
                yield LatencyHistogram(id="histogram")
                yield Label("", id="percentiles", markup=False)
            for name in _TABLES:
                with TabPane(name, id=f"tab-{name}"):
                    yield DataTable(id=f"table-{name}", cursor_type="row")
            with TabPane("log", id="tab-log"):
                yield Log(id="run-log", max_lines=5000)

    def on_mount(self) -> None:
        for name in _TABLES:
            self.query_one(f"#table-{name}", DataTable).add_columns("name", "value")
        from edgehub.tui.runs_data import run_detail

        project, run_id = self.state.project, self.run_id
        self.in_thread("detail", lambda: run_detail(project, run_id))

    def action_toggle_log(self) -> None:
        self.query_one("#histogram", LatencyHistogram).toggle_log()

    def worker_done(self, name: str, result: Any) -> None:
        if name == "detail":
            self.show(result)

    def show(self, detail: RunDetail) -> None:
        row = detail.run
        clock = self.state.clock
        title = (
            f"run {row.run_id[:8]}  {row.name}  {row.run_type}  {row.status}  "
            f"{row.runtime or '-'} on {row.device or '-'}  started {clock.when(row.started_at)}  "
            f"took {clock.took(row.started_at, row.ended_at)}"
        )
        title = visible(title)  # a name or error may come from a bundle or a device
        if row.error:
            title += f"\nerror: {visible(row.error)}"
        self.query_one("#run-title", Label).update(title)
        sections: dict[str, dict[str, Any]] = {
            "metrics": detail.metrics,
            "params": detail.params,
            "artifacts": detail.artifacts,
            "environment": row.environment,
        }
        for name, values in sections.items():
            table = self.query_one(f"#table-{name}", DataTable)
            table.clear()
            table.add_rows([plain(key, _text(value)) for key, value in sorted(values.items())])
        shown = [visible(line, lines=True) for line in detail.log_lines]
        self.query_one("#run-log", Log).write_lines(shown or ["(no log recorded)"])
        self.query_one("#histogram", LatencyHistogram).show_samples(detail.samples_us)
        self.query_one("#percentiles", Label).update(
            "\n".join(percentile_lines(detail.percentiles))
        )
        if not detail.samples_us:
            self.query_one("#run-tabs", TabbedContent).active = "tab-metrics"
        if detail.accuracy is not None:
            self.call_later(self._show_accuracy, detail.accuracy)
        conditions = {
            k.removeprefix("conditions."): v
            for k, v in row.environment.items()
            if k.startswith("conditions.")
        }
        if conditions:
            self.call_later(self._show_conditions, conditions, row.environment)

    async def _show_conditions(
        self, conditions: dict[str, str], environment: dict[str, str]
    ) -> None:
        from edgehub.tui.widgets.conditions_view import ConditionsView

        pane = TabPane("conditions", ConditionsView(conditions, environment), id="tab-conditions")
        await self.query_one("#run-tabs", TabbedContent).add_pane(pane, after="tab-latency")

    async def _show_accuracy(self, accuracy: Accuracy) -> None:
        from edgehub.tui.widgets.accuracy_view import AccuracyView

        tabs = self.query_one("#run-tabs", TabbedContent)
        view = AccuracyView(accuracy, id="accuracy")
        await tabs.add_pane(TabPane("accuracy", view, id="tab-accuracy"), before="tab-latency")
        tabs.hide_tab("tab-latency")  # an eval measures no latency
        tabs.active = "tab-accuracy"
