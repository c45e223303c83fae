"""A table as Rich draws it on a pipe, without Rich: a short command's result printed without
importing it: Rich's import is a large part of a warm invoke's host CPU, the figure
`benchmarks/bench_ort_local.py` (e) keeps.

On a stream that is not a terminal Rich draws `edgehub.cli.output.table` without colours, one
line per row however wide, and its layout is fixed: each column as wide as its widest cell,
left-aligned, columns three spaces apart, a rule of ``─`` under the header, trailing spaces cut.
`plain_table` draws exactly that where every cell is printable ASCII (one character, one
column) and the stream takes UTF-8; anywhere else (a terminal, wide or combining characters,
an encoding for which Rich falls back to ASCII rules) it answers None and Rich draws.
"""

from __future__ import annotations

from collections.abc import Sequence

_GAP = "   "  # a cell's right padding, the column divider (a space), the next one's left padding


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]], encoding: str) -> str | None:
    """The lines of the table of ``headers`` over ``rows`` (cells as text), each ending in a
    newline, as Rich draws it on a pipe of ``encoding``; None where only Rich can tell."""
    if not headers or not encoding.lower().startswith("utf"):
        return None
    count = len(headers)
    lines = [list(headers)]
    for row in rows:
        if len(row) > count:
            return None
        lines.append([*row, *[""] * (count - len(row))])
    if not all(cell.isascii() and cell.isprintable() for line in lines for cell in line):
        return None
    widths = [max(len(line[column]) for line in lines) for column in range(count)]
    if count == 1 and not widths[0]:
        return None  # an empty table: Rich still draws one column of its rule
    drawn = [_GAP.join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
             for line in lines]  # fmt: skip
    drawn.insert(1, "─" * (sum(widths) + len(_GAP) * (count - 1)))
    return "".join(line.rstrip() + "\n" for line in drawn)
