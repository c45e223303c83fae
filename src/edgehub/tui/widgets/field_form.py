"""`FieldForm`: a form generated from `FieldSpec`s: typed inputs, choices for enums, a switch
for booleans, and an inline message under each field that does not validate, kept up to date
as the user types (a letter in a number field is shown and flagged, not dropped)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Switch

from edgehub.tui.config_fields import FieldSpec


def field_row(label: str, editor: Widget, **kwargs: Any) -> Horizontal:
    """A form's line: ``label``, then ``editor`` (the ``.field`` style)."""
    return Horizontal(Label(label, classes="name", markup=False), editor, classes="field", **kwargs)


class FormInvalid(Exception):
    """Some fields did not validate; each got its message shown."""


def _shown(spec: FieldSpec, value: Any) -> str:
    if value is None:
        return ""
    if spec.kind == "list" and isinstance(value, (list, tuple)):
        return shlex.join(str(v) for v in value)
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class FieldForm(Vertical):
    """Fields named by ``spec.key``; `values` returns the typed values that were filled in.

    ``parse_text(key, text)`` reads text fields (for component options: by the option's
    declared type, as ``--set`` does); without it text stays text.
    """

    DEFAULT_CSS = """
    FieldForm { height: auto; }
    FieldForm .field { height: auto; }
    FieldForm .field > Label.name { width: 18; padding: 0 1 0 0; }
    FieldForm .field > Input, FieldForm .field > Select { width: 1fr; }
    FieldForm .error { color: $error; padding-left: 18; display: none; }
    FieldForm .error.shown { display: block; }
    """

    def __init__(
        self,
        specs: list[FieldSpec],
        values: dict[str, Any] | None = None,
        *,
        parse_text: Callable[[str, str], Any] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.specs = specs
        self._initial = values or {}
        self._parse_text = parse_text

    def compose(self) -> ComposeResult:
        for spec in self.specs:
            mark = "*" if spec.required else ""
            yield field_row(f"{spec.label}{mark}", self._editor(spec, self._initial.get(spec.key)))
            yield Label("", classes="error", name=spec.key, markup=False)

    def _editor(self, spec: FieldSpec, value: Any) -> Input | Select[str] | Switch:
        if spec.kind == "choice":
            current = value if value is not None else spec.default
            return Select(
                [(c, c) for c in spec.choices],
                value=current if current in spec.choices else Select.NULL,
                allow_blank=not spec.required,
                name=spec.key,
                compact=True,
            )
        if spec.kind == "bool":
            checked = bool(value if value is not None else spec.default)
            return Switch(value=checked, name=spec.key)
        placeholder = "" if spec.default is None else _shown(spec, spec.default)
        return Input(
            _shown(spec, value),
            placeholder=placeholder or ("required" if spec.required else ""),
            name=spec.key,
            compact=True,
        )

    def on_input_changed(self, event: Input.Changed) -> None:
        """Check the field as it is typed; its message shows or goes."""
        spec = next((s for s in self.specs if s.key == event.input.name), None)
        if spec is None:
            return
        text = event.value.strip()
        try:
            if text:
                self._typed(spec, text)
        except ValueError as error:
            self.show_error(spec.key, str(error))
            return
        self.clear_errors(spec.key)

    def values(self) -> dict[str, Any]:
        """The filled-in fields, typed (empty ones left out); `FormInvalid` if any is wrong."""
        self.clear_errors()
        result: dict[str, Any] = {}
        failed = False
        for spec in self.specs:
            try:
                value = self._read(spec)
            except ValueError as error:
                self.show_error(spec.key, str(error))
                failed = True
                continue
            if value is not None:
                result[spec.key] = value
        if failed:
            raise FormInvalid("some fields are not valid")
        return result

    def _read(self, spec: FieldSpec) -> Any:
        editor = self._editor_of(spec.key)
        if isinstance(editor, Switch):
            return editor.value if editor.value != spec.default else None
        if isinstance(editor, Select):
            return None if editor.value is Select.NULL else editor.value
        assert isinstance(editor, Input)
        text = editor.value.strip()
        if not text:
            if spec.required:
                raise ValueError(f"{spec.label} is required")
            return None
        return self._typed(spec, text)

    def _editor_of(self, key: str) -> Input | Select[str] | Switch:
        for widget in self.query(".field > Input, .field > Select, .field > Switch"):
            if widget.name == key and isinstance(widget, (Input, Select, Switch)):
                return widget
        raise KeyError(key)

    def _typed(self, spec: FieldSpec, text: str) -> Any:
        if spec.kind in ("int", "float"):
            try:
                number = int(text) if spec.kind == "int" else float(text)
            except ValueError:
                whole = "a whole number" if spec.kind == "int" else "a number"
                raise ValueError(f"{spec.label}: {text!r} is not {whole}") from None
            if self._parse_text is None:
                return number
        elif spec.kind == "list":
            try:
                return shlex.split(text)
            except ValueError as error:
                raise ValueError(f"{spec.label}: {error}") from None
        if self._parse_text is None:
            return text
        from edgehub.errors import UsageError

        try:
            return self._parse_text(spec.key, text)
        except UsageError as error:  # under the field: its label and the reason, not whose
            message = str(error)  # option it is (that left the reason cut off at the edge)
            _, named, reason = message.partition(f"option {spec.key!r} ")
            raise ValueError(f"{spec.label} {reason}" if named else message) from None

    def show_error(self, key: str, message: str) -> bool:
        """Show ``message`` under field ``key``; False if there is no such field."""
        for label in self.query(Label).filter(".error"):
            if label.name == key:
                label.update(message)
                label.add_class("shown")
                label.call_after_refresh(label.scroll_visible)  # in a form that scrolls
                return True
        return False

    def clear_errors(self, key: str | None = None) -> None:
        """Hide the message under field ``key``, or under every field."""
        for label in self.query(Label).filter(".error"):
            if key is None or label.name == key:
                label.update("")
                label.remove_class("shown")
