"""The text a terminal shows after a stream of output: enough of a VT100 screen to read what
`hub-tui --serve` sent to the browser (cursor positioning, erasing, line feeds, wide characters;
styles, modes and titles ignored)."""

from __future__ import annotations

import codecs
import re
import unicodedata

# one token: a control sequence, an OSC/DCS/APC string, another escape, a control, or text
TOKEN = re.compile(
    r"\x1b\[(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])"
    r"|\x1b[\]P_^][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[()#][0-9A-Za-z]|\x1b[^\[\]P_^()#]"
    r"|(?P<control>[\x00-\x1a\x1c-\x1f\x7f])"
    r"|(?P<text>[^\x00-\x1f\x7f\x1b]+)"
)


def _width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


class TerminalScreen:
    """A ``width`` by ``height`` character grid fed with terminal output (bytes, any chunking)."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.rows = [[" "] * width for _ in range(height)]
        self.row = self.column = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""

    def feed(self, data: bytes) -> None:
        text = self._pending + self._decoder.decode(data)
        self._pending = ""
        end = 0
        for match in TOKEN.finditer(text):
            if match.start() != end:  # a gap: an escape cut at the chunk's end
                break
            end = match.end()
            self._apply(match)
        self._pending = text[end:]

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.rows]

    def text(self) -> str:
        return "\n".join(self.lines())

    def _apply(self, match: re.Match[str]) -> None:
        if match["text"] is not None:
            for char in match["text"]:
                self._put(char)
        elif match["control"] is not None:
            char = match["control"]
            if char == "\r":
                self.column = 0
            elif char == "\n":
                self.row = min(self.row + 1, self.height - 1)
            elif char == "\b":
                self.column = max(self.column - 1, 0)
        elif match["final"] is not None and not match["params"].startswith(("?", ">", "<", "=")):
            numbers = [int(part) if part.isdigit() else 0 for part in match["params"].split(";")]
            self._csi(match["final"], numbers)

    def _csi(self, final: str, numbers: list[int]) -> None:
        first = numbers[0] or 1
        if final in "Hf":
            second = numbers[1] if len(numbers) > 1 and numbers[1] else 1
            self._move(first - 1, second - 1)
        elif final == "A":
            self._move(self.row - first, self.column)
        elif final in "Be":
            self._move(self.row + first, self.column)
        elif final in "Ca":
            self._move(self.row, self.column + first)
        elif final == "D":
            self._move(self.row, self.column - first)
        elif final in "G`":
            self._move(self.row, first - 1)
        elif final == "d":
            self._move(first - 1, self.column)
        elif final == "K":
            row, mode = self.rows[self.row], numbers[0]
            start, stop = {0: (self.column, self.width), 1: (0, self.column + 1)}.get(
                mode, (0, self.width)
            )
            row[start:stop] = [" "] * (stop - start)
        elif final == "J" and numbers[0] in (2, 3):
            self.rows = [[" "] * self.width for _ in range(self.height)]

    def _move(self, row: int, column: int) -> None:
        self.row = min(max(row, 0), self.height - 1)
        self.column = min(max(column, 0), self.width - 1)

    def _put(self, char: str) -> None:
        width = _width(char)
        if width == 0:
            return
        if self.column + width > self.width:  # no wrapping: Textual positions every line
            return
        self.rows[self.row][self.column] = char
        if width == 2 and self.column + 1 < self.width:
            self.rows[self.row][self.column + 1] = ""
        self.column += width
