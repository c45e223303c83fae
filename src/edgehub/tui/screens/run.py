"""The Run screen: model, runtime, step (or the pipeline, or an eval over a dataset), device and
options; launch; a pane per run that streams its log live; cancel. Several runs can go at once.

Each run is `ops.execute` (`ops.eval.evaluate` for eval) in a thread worker with a
`Cancellation`; its events reach the pane through a `LineBuffer` in batches (`LinesReady`), and
its end comes back as `RunEnded`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Select, TabbedContent, TabPane

from edgehub.errors import EdgehubError, UsageError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.execute import STEPS, ExecRequest
from edgehub.text import visible
from edgehub.tui.eval_form import EVAL_FIELDS, EVAL_STEP
from edgehub.tui.messages import LinesReady, RunEnded
from edgehub.tui.run_summary import summary_lines
from edgehub.tui.screens.base import HubScreen
from edgehub.tui.screens.model_pick import ModelPickScreen
from edgehub.tui.widgets.field_form import FieldForm, FormInvalid, field_row
from edgehub.tui.widgets.run_pane import LOG_LIMIT, RunPane

if TYPE_CHECKING:
    from edgehub.ops.eval import EvalRequest


class RunScreen(HubScreen):
    AUTO_FOCUS = "#pick"
    BINDINGS = [
        Binding("ctrl+r", "launch", "Launch"),
        Binding("ctrl+t", "pick", "Pick model"),
        Binding("ctrl+l", "close_tab", "Close tab"),  # ^w deletes a word in fields
    ]
    NAV = "run"

    def __init__(self, state: Any) -> None:
        super().__init__(state)
        self._launched = 0
        self._options_for: tuple[str | None, str | None] | None = None  # the form's choices

    def body(self) -> ComposeResult:
        from edgehub.core.runtimes import runtime_names

        with Horizontal(id="run-body"):
            with VerticalScroll(id="run-form"):
                model = Input(placeholder="path to an ONNX model", id="model", compact=True)
                yield field_row("model", model)
                yield Button("Pick a model (^t)", id="pick", compact=True)
                names = runtime_names()
                for label, choices, first in (
                    ("runtime", names, names[0]),
                    ("step", (*STEPS, EVAL_STEP), "profile"),
                ):
                    options = [(c, c) for c in choices]
                    select = Select(options, value=first, allow_blank=False, id=label, compact=True)
                    yield field_row(label, select)
                devices = Select(self._devices(), prompt="auto", id="device", compact=True)
                yield field_row("device", devices)
                yield Vertical(id="options")
                yield Button("Launch (^r)", variant="primary", id="launch", compact=True)
            with Vertical(id="run-panes"):
                yield Label("No runs yet: fill in the form and launch.", id="no-runs", markup=False)
                yield TabbedContent(id="panes")

    def _devices(self) -> list[tuple[str, str]]:
        from edgehub.ops.devices import list_devices

        return [(d.name, d.name) for d in list_devices(self.state.project)]

    def on_mount(self) -> None:
        self.query_one("#panes").display = False

    def config_reloaded(self) -> None:
        self.query_one("#device", Select).set_options(self._devices())

    # -- the form --------------------------------------------------------------------------

    @on(Select.Changed, "#runtime, #step")
    async def _choice_changed(self) -> None:
        if self._options_for is not None:  # else the form is still to be built: `build_later`
            await self._rebuild_options()

    async def build_later(self) -> None:
        """The options' form (a third of the screen's widgets), after the rest is shown."""
        await self._rebuild_options()

    async def _rebuild_options(self) -> None:
        from functools import partial

        from edgehub.core.runtimes import get_runtime
        from edgehub.ops.execute import step_components
        from edgehub.ops.options import component_options, parse_value
        from edgehub.tui.config_fields import option_fields

        runtime, step = self._value("#runtime"), self._value("#step")
        if (runtime, step) == self._options_for:
            return  # both selects say "changed" once mounted: one form is enough
        self._options_for = (runtime, step)
        box = self.query_one("#options", Vertical)
        await box.remove_children()
        try:
            if step == EVAL_STEP:
                components = await self._mount_eval_form(box, runtime or "")
            else:
                components = step_components(get_runtime(runtime or ""), step or "")
        except EdgehubError as error:
            await box.mount(Label(visible(str(error)), classes="message", markup=False))
            return
        for name, component in components.items():
            form = FieldForm(
                option_fields(component_options(component, aliases=False)),
                parse_text=partial(parse_value, component),
                id=f"opt-{name}",
            )
            form.border_title = f"{name} options"
            await box.mount(form)

    async def _mount_eval_form(self, box: Vertical, runtime: str) -> dict[str, Any]:
        """The eval options' form; the components whose options follow it (the compiler)."""
        from edgehub.core.runtimes import get_runtime
        from edgehub.ops.eval import eval_runtimes

        if runtime not in eval_runtimes():
            raise UsageError(f"eval runs on {', '.join(eval_runtimes())}; pick one of them")
        form = FieldForm(EVAL_FIELDS, id="opt-eval")
        form.border_title = "eval options"
        await box.mount(form)
        return {"compile": get_runtime(runtime).compiler}

    def _value(self, selector: str) -> str | None:
        value = self.query_one(selector, Select).value
        return None if value is Select.NULL else str(value)

    @on(Button.Pressed, "#pick")
    def action_pick(self) -> None:
        root = self.state.root

        def picked(path: Path | None) -> None:
            if path is not None:
                shown = path.relative_to(root) if path.is_relative_to(root) else path
                self.query_one("#model", Input).value = str(shown)

        self.app.push_screen(ModelPickScreen(root), picked)

    def _request(self) -> ExecRequest | EvalRequest | None:
        text = self.query_one("#model", Input).value.strip()
        if not text:
            self.notify("pick a model first (^t)", severity="warning", markup=False)
            return None
        model = Path(text).expanduser()
        model = model if model.is_absolute() else self.state.root / model
        options: dict[str, dict[str, Any]] = {}
        try:
            for form in self.query("#options FieldForm").results(FieldForm):
                options[(form.id or "").removeprefix("opt-")] = form.values()
        except FormInvalid:
            self.notify(
                "some options are not valid (marked in the form)", severity="error", markup=False
            )
            return None
        if self._value("#step") == EVAL_STEP:
            from edgehub.tui.eval_form import eval_request, missing_paths

            missing = missing_paths(self.state.root, options.get(EVAL_STEP, {}))
            if missing:
                form = self.query_one(f"#opt-{EVAL_STEP}", FieldForm)
                for key, message in missing.items():
                    form.show_error(key, message)
                self.notify("check the eval form (marked)", severity="error", markup=False)
                return None
            return eval_request(
                runtime=self._value("#runtime") or "",
                model=model,
                device=self._value("#device"),
                root=self.state.root,
                values=options.pop(EVAL_STEP, {}),
                compile_options=options.get("compile", {}),
            )
        return ExecRequest(
            step=self._value("#step") or "profile",
            runtime=self._value("#runtime") or "",
            model=model,
            device=self._value("#device"),
            options=options,
        )

    # -- launching -------------------------------------------------------------------------

    @on(Button.Pressed, "#launch")
    def action_launch(self) -> None:
        request = self._request()
        if request is not None:
            self.launch(request)

    def launch(self, request: ExecRequest | EvalRequest) -> str:
        """Start ``request`` in a worker with its own pane; returns the pane's id."""
        from edgehub.tui.line_buffer import LineBuffer

        self._launched += 1
        pane_id = f"run-{self._launched}"

        def wake() -> None:
            self.post_message(LinesReady(pane_id))

        buffer = LineBuffer(wake, limit=LOG_LIMIT)  # older lines would be pruned anyway
        model = request.model.name if request.model else request.from_run
        step = request.step if isinstance(request, ExecRequest) else EVAL_STEP
        title = f"#{self._launched} {step} {model} ({request.runtime})"
        pane = RunPane(title, self.state.clock, id=pane_id, buffer=buffer)
        tabs = self.query_one("#panes", TabbedContent)
        tabs.display = True
        self.query_one("#no-runs").display = False
        tabs.add_pane(TabPane(f"#{self._launched} {step}", pane, id=f"tab-{pane_id}"))
        tabs.active = f"tab-{pane_id}"
        self.call_after_refresh(self._show_tab, f"tab-{pane_id}")
        cancel = Cancellation()
        self.state.run_started(pane_id, cancel, title)
        self.app.refresh_bindings()
        self._execute(pane_id, request, buffer, cancel)
        self.leave_field()  # launched: the next key is a shortcut, not more text
        return pane_id

    @work(thread=True, exit_on_error=False, group="runs")
    def _execute(
        self, pane_id: str, request: ExecRequest | EvalRequest, buffer: Any, cancel: Cancellation
    ) -> None:
        from edgehub.ops.execute import execute

        project, push = self.state.project, buffer.push

        def run() -> Any:
            if isinstance(request, ExecRequest):
                return execute(project, request, subscriber=push, cancel=cancel)
            from edgehub.ops.eval import evaluate

            return evaluate(project, request, subscriber=push, cancel=cancel)

        # an error is shown in its pane and as a notification
        self.post_message(RunEnded(pane_id, *self.ended(f"run {pane_id}", run)))

    def on_lines_ready(self, message: LinesReady) -> None:
        self._pane(message.pane_id).drain()

    def on_run_ended(self, message: RunEnded) -> None:
        self.state.run_ended(message.pane_id)
        self.app.refresh_bindings()
        self.refresh_bindings()
        pane = self._pane(message.pane_id)
        pane.finish(message.status, summary_lines(message.report, message.error))
        severity = "information" if message.status == "FINISHED" else "error"
        text = f"{pane.title}: {message.status}"
        if message.error:
            text += f": {message.error.splitlines()[0]}"
        self.notify(text, severity=severity, markup=False)  # type: ignore[arg-type]

    def _pane(self, pane_id: str) -> RunPane:
        return self.query_one(f"#{pane_id}", RunPane)

    def _show_tab(self, pane: str) -> None:
        """Scroll the tab bar to a new run's tab (once mounted; the bar hides its scroll bar,
        hence ``force``)."""
        tab = self.query_one("#panes", TabbedContent).get_tab(pane)
        tab.scroll_visible(animate=False, force=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_tab":  # only a finished run's tab closes
            active = (self.query_one("#panes", TabbedContent).active or "").removeprefix("tab-")
            return bool(active) and active not in self.state.runs
        return True

    async def action_close_tab(self) -> None:
        tabs = self.query_one("#panes", TabbedContent)
        active = tabs.active or ""
        if not active or active.removeprefix("tab-") in self.state.runs:
            return
        await tabs.remove_pane(active)
        if tabs.tab_count == 0:
            tabs.display = False
            self.query_one("#no-runs").display = True
        self.refresh_bindings()

    @on(TabbedContent.TabActivated, "#panes")
    def _tab_changed(self) -> None:
        self.refresh_bindings()

    def active_run(self) -> str | None:
        """The run of the pane in view, while it goes."""
        pane_id = (self.query_one("#panes", TabbedContent).active or "").removeprefix("tab-")
        return pane_id if pane_id in self.state.runs else None

    def run_cancelling(self, run_id: str) -> None:
        if self.query(f"#{run_id}"):
            self._pane(run_id).status = "CANCELLING"
