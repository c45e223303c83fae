"""`HelpScreen`: every key of the screen it was opened on, and the keys that work everywhere."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

_NAMES = {"question_mark": "?", "escape": "Esc", "enter": "Enter", "delete": "Del"}
_NAMES.update({f"f{number}": f"F{number}" for number in range(1, 6)})


def _key(key: str) -> str:
    key = key.strip()
    if key.startswith("ctrl+"):
        return "^" + key.removeprefix("ctrl+")
    return _NAMES.get(key, key)


def key_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(keys, what they do) of ``bindings``, one row per action."""
    rows: dict[str, tuple[list[str], str]] = {}
    for binding in bindings:
        if not isinstance(binding, Binding):
            continue
        keys, _ = rows.setdefault(binding.action, ([], binding.description or binding.action))
        keys.extend(_key(k) for k in binding.key.split(","))
    return [(" ".join(keys), description) for keys, description in rows.values()]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,f1,q", "close", "Close")]

    def __init__(self, title: str, sections: dict[str, list[tuple[str, str]]]) -> None:
        super().__init__()
        self.title_text = title
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide tall", id="help"):
            yield Label(f"Keys of {self.title_text} (Esc, ? or F1 closes)", classes="title")
            for section, rows in self.sections.items():
                if not rows:
                    continue
                yield Label(section, classes="section", markup=False)
                width = max(len(keys) for keys, _ in rows) + 2
                lines = [f"{keys:<{width}}{what}" for keys, what in rows]
                yield Static("\n".join(lines), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
