"""The CLI's terminal: while a command runs, everything it prints on stdout and stderr goes
through `edgehub.text.visible` (newlines and tabs kept), so text that came from a device, an
imported run or a user's file cannot drive the terminal, whichever print it reaches. The CLI's
own drawing (the progress bar's carriage returns, a table's colours) writes to `raw`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from edgehub.text import visible


class Guarded:
    """A text stream that shows what is written to it with `visible`; the rest is the
    stream's own (``isatty``, ``encoding``, ``flush``, ...)."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(visible(text, lines=True))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw(stream: TextIO) -> TextIO:
    """Where the CLI writes its own control sequences: the stream under a `Guarded` one."""
    return stream.raw if isinstance(stream, Guarded) else stream


def confirmed(question: str, unasked: str) -> bool:
    """Whether the user answers y or yes to ``question``; without a terminal to ask on, a
    `UsageError` saying ``unasked`` (what to pass instead)."""
    from edgehub.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError(unasked)
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """sys.stdout and sys.stderr guarded for the block (each once, however nested)."""
    saved = sys.stdout, sys.stderr
    if saved[0] is not None and not isinstance(saved[0], Guarded):
        sys.stdout = Guarded(saved[0])
    if saved[1] is not None and not isinstance(saved[1], Guarded):
        sys.stderr = Guarded(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
