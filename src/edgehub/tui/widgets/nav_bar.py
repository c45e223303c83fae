"""`NavBar`: the line under the header naming the screens and their keys, the current one
highlighted (the footer then has room for the screen's own keys at 80 columns). In a narrow
window it gives up its parts by priority: the hints first, then the other screens' names (their
keys stay), never the current screen's name."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

SCREEN_KEYS = (
    ("1", "devices", "Devices"),
    ("2", "run", "Run"),
    ("3", "runs", "Runs"),
    ("4", "images", "Images"),
    ("5", "sweep", "Sweep"),
)
HINTS = ("q Quit  ? Help  Esc unfocus", "q Quit  ? Help", "? Help", "")


class NavBar(Widget):
    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def render(self) -> Text:
        return nav_line(self.current, self.content_size.width)

    def on_resize(self) -> None:
        self.refresh()


def nav_line(current: str, width: int) -> Text:
    """The bar for ``current`` in ``width`` cells: the widest form that fits."""
    for named in (True, False):
        for hint in HINTS:
            line = Text()
            for key, mode, label in SCREEN_KEYS:
                shown = label if named or mode == current else ""
                style = "bold reverse" if mode == current else ""
                line.append(f" {key} {shown} " if shown else f" {key} ", style=style)
                line.append(" " if named else "")
            line.append(hint, style="dim")
            if line.cell_len <= width:
                return line
    return line
