"""`NavBar`: the line under the header naming the screens and their keys, the current one
highlighted (the footer then has room for the screen's own keys at 80 columns)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

__all__ = ["SCREEN_KEYS", "NavBar"]

SCREEN_KEYS = (
    ("1", "devices", "Devices"),
    ("2", "run", "Run"),
    ("3", "runs", "Runs"),
    ("4", "images", "Images"),
    ("5", "sweep", "Sweep"),
)


class NavBar(Static):
    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, current: str) -> None:
        super().__init__(self._line(current))

    @staticmethod
    def _line(current: str) -> Text:
        line = Text()
        for key, mode, label in SCREEN_KEYS:
            style = "bold reverse" if mode == current else ""
            line.append(f" {key} {label} ", style=style)
            line.append(" ")
        line.append("q Quit  ? Help  Esc unfocus", style="dim")
        return line
