"""`ViTable`: a row table that also moves by vi's keys (j/k, g/G) and jumps to its first and
last row with Home/End. They are the table's own bindings, so they act only while the table has
focus: never while a text field does (`edgehub.tui.screens.base`)."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable


class ViTable(DataTable[str]):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g,home", "scroll_top", "First", show=False),
        Binding("G,shift+g,end", "scroll_bottom", "Last", show=False),
    ]
