"""`DeviceEditScreen`: add or edit one device: its name, provider, SSH access, provider
settings and per-component overrides, in forms generated from the config schema.

Saving first applies the edit to a scratch copy of hub.toml and validates it with the loader;
an edit that does not validate is shown at its field and not returned. The screen dismisses
with ``(name, values)`` for the Devices screen to apply, or None.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Switch

from edgehub.config.save import ConfigDocument
from edgehub.config.schema import SchemaError, location
from edgehub.errors import ConfigError
from edgehub.ops.config_edit import write_device
from edgehub.tui.config_fields import (
    FieldSpec,
    component_names,
    provider_choices,
    settings_fields,
    settings_table,
    ssh_fields,
    takes_ssh,
)
from edgehub.tui.widgets.field_form import FieldForm, FormInvalid, field_row

Edit = tuple[str, dict[str, Any]]


def _device_fields(provider: str | None) -> list[FieldSpec]:
    return [
        FieldSpec("name", "text", required=True),
        FieldSpec("provider", "choice", choices=tuple(provider_choices(provider))),
        FieldSpec("spec", "text"),
    ]


class DeviceEditScreen(ModalScreen[Edit | None]):
    AUTO_FOCUS = "#device Input"
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+o", "save", "OK")]

    def __init__(
        self, document: ConfigDocument, name: str | None, values: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.document = document
        self.previous = name
        self.values = dict(values or {})
        self.provider: str | None = self.values.get("provider")
        self._forms = 0

    def compose(self) -> ComposeResult:
        title = f"Edit device {self.previous}" if self.previous else "Add a device"
        with VerticalScroll(classes="dialog wide"):
            yield Label(title, classes="title", markup=False)
            initial = {"name": self.values.get("name", self.previous or ""), **self.values}
            yield FieldForm(_device_fields(self.provider), initial, id="device")
            ssh = self.values.get("ssh")
            yield field_row("over SSH", Switch(value=ssh is not None, id="ssh-on"), id="ssh-toggle")
            yield FieldForm(ssh_fields(), ssh or {}, id="ssh")
            yield Label("", id="settings-title", classes="section", markup=False)
            yield self._settings_form(self.values)
            yield Label("per-component overrides", classes="section", markup=False)
            for component, tables in (self.values.get("overrides") or {}).items():
                yield self._override(component, tables)
            with Horizontal(classes="field", id="add-override"):
                yield Select(
                    [(c, c) for c in component_names()], prompt="component…", id="override-pick"
                )
                yield Button("Add override", id="override-add")
            yield Label("", id="message", classes="message", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Save (^o)", variant="primary", id="save")
                yield Button("Cancel (Esc)", id="cancel")

    def on_mount(self) -> None:
        self._show_provider_parts()

    def _settings_form(self, values: dict[str, Any], id: str = "settings") -> FieldForm:
        """The provider's settings table (``values`` holds it by name) as a form."""
        table = settings_table(self.provider) or ""
        return FieldForm(settings_fields(self.provider), values.get(table) or {}, id=id)

    def _override(self, component: str, tables: dict[str, Any]) -> FieldForm:
        self._forms += 1
        form = self._settings_form(tables, id=f"override-{self._forms}")
        form.border_title = component
        form.add_class("override")
        return form

    def _show_provider_parts(self) -> None:
        table = settings_table(self.provider)
        title = self.query_one("#settings-title", Label)
        title.update(f"[{table}] settings" if table else "this provider has no settings table")
        ssh_possible = takes_ssh(self.provider)
        self.query_one("#ssh-toggle").display = ssh_possible
        wanted = ssh_possible and self.query_one("#ssh-on", Switch).value
        self.query_one("#ssh", FieldForm).display = wanted

    @on(Select.Changed)
    async def _provider_changed(self, event: Select.Changed) -> None:
        if event.select.name != "provider":
            return
        provider = None if event.value is Select.NULL else str(event.value)
        if provider == self.provider:
            return
        self.provider = provider
        old = self.query_one("#settings", FieldForm)
        await old.remove()
        await self.mount(self._settings_form({}), after="#settings-title")
        for form in list(self.query(".override")):
            await form.remove()
        self._show_provider_parts()

    @on(Switch.Changed, "#ssh-on")
    def _ssh_toggled(self) -> None:
        self._show_provider_parts()

    @on(Button.Pressed, "#override-add")
    async def _add_override(self) -> None:
        pick = self.query_one("#override-pick", Select)
        if pick.value is Select.NULL or not settings_table(self.provider):
            self.notify(
                "pick a component, and a provider that has settings",
                severity="warning",
                markup=False,
            )
            return
        await self.mount(self._override(str(pick.value), {}), before="#add-override")

    @on(Button.Pressed, "#save")
    @on(Input.Submitted)
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        try:
            name, values = self._collect()
        except FormInvalid:
            self._message("fix the fields marked above")
            return
        error = self._validate(name, values)
        if error is None:
            self.dismiss((name, values))

    def _collect(self) -> Edit:
        failed = False
        parts: dict[str, dict[str, Any]] = {}
        over_ssh = takes_ssh(self.provider) and self.query_one("#ssh-on", Switch).value
        for form in self.query(FieldForm):
            if form.id == "ssh" and not over_ssh:
                continue
            try:
                parts[form.id or ""] = form.values()
            except FormInvalid:
                failed = True
        if failed:
            raise FormInvalid
        device = parts.pop("device")
        name = str(device.pop("name"))
        values: dict[str, Any] = dict(device)
        if over_ssh:
            values["ssh"] = parts.pop("ssh")
        table = settings_table(self.provider)
        settings = parts.pop("settings", {})
        if table and (settings or table in self.values):
            values[table] = settings
        overrides = {}
        for override in self.query(".override").results(FieldForm):
            if table:
                overrides[str(override.border_title)] = {table: parts.get(override.id or "", {})}
        if overrides:
            values["overrides"] = overrides
        return name, values

    def _validate(self, name: str, values: dict[str, Any]) -> str | None:
        """Apply the edit to a scratch copy of the document and load it; the error, if any,
        is shown at its field."""
        scratch = ConfigDocument(self.document.path, self.document.text)
        try:
            write_device(scratch, name, values, previous=self.previous)
            scratch.validate()
        except SchemaError as error:
            # the loader cites hub.toml:LINE, a line of this unsaved edit, not of the file
            shown = location(scratch.path, error.line) + ": "
            unsaved = SchemaError(error.key, error.message.removeprefix(shown), line=error.line)
            self._show_schema_error(unsaved)
            return unsaved.message
        except (ConfigError, ValueError) as error:
            self._message(str(error))
            return str(error)
        return None

    def _show_schema_error(self, error: SchemaError) -> None:
        self._message(error.message)
        key = error.key[2:] if error.key[:1] == ("devices",) else error.key
        if not key:
            return
        if len(key) == 1 and self.query_one("#device", FieldForm).show_error(key[0], error.message):
            return
        form_id = {"ssh": "ssh"}.get(key[0], "settings")
        if len(key) >= 2:
            self.query_one(f"#{form_id}", FieldForm).show_error(key[-1], error.message)

    def _message(self, text: str) -> None:
        self.query_one("#message", Label).update(text)
