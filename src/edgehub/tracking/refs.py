"""Run references: a full id, a unique id prefix, ``latest`` or ``latest:<kind>``.

Ids and prefixes match literally (``%`` and ``_`` are plain characters). ``latest`` is the newest
run of the kind the caller needs (its ``run_type``), ``latest:compile`` the newest compile run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

from edgehub.errors import RunNotFoundError
from edgehub.tracking.run_type import RunType

Query = Callable[[str, "tuple[Any, ...] | dict[str, Any]"], list[sqlite3.Row]]

_ALIASES = {"INVOKE": RunType.INFERENCE.value}
_CANDIDATES = 5


def parse_run_type(kind: RunType | str) -> str:
    """``compile`` -> ``COMPILE``; ``invoke`` -> ``INFERENCE``; other names upper-cased."""
    text = str(RunType.coerce(kind)).upper()
    return _ALIASES.get(text, text)


def _describe(row: sqlite3.Row) -> str:
    try:
        when = datetime.fromtimestamp(row["started_at"]).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError, TypeError):  # a damaged record
        when = "?"
    return f"{row['id'][:12]} ({row['type']} {row['name']}, {when})"


def resolve_run_ref(query: Query, ref: str, run_type: RunType | str | None = None) -> str:
    """The full run id ``ref`` names; `RunNotFoundError` when none or several match."""
    text = ref.strip()
    if not text:
        raise RunNotFoundError("empty run reference; give a run id, a prefix of one, or 'latest'")
    head, _, kind = text.partition(":")
    if head.lower() == "latest":
        wanted = parse_run_type(kind) if kind else (parse_run_type(run_type) if run_type else None)
        sql = "SELECT id FROM runs"
        args: tuple[Any, ...] = ()
        if wanted:
            sql += " WHERE type = ?"
            args = (wanted,)
        rows = query(sql + " ORDER BY started_at DESC LIMIT 1", args)
        if not rows:
            if not wanted:
                raise RunNotFoundError("no run in the run store yet; run `hub exec ...` first")
            kinds = sorted(str(r["type"]) for r in query("SELECT DISTINCT type FROM runs", ()))
            known = ", ".join(f"latest:{k.lower()}" for k in kinds)
            hint = f"the store holds {known}" if kinds else "run `hub exec ...` first"
            raise RunNotFoundError(f"no run of type {wanted} in the run store; {hint}")
        return str(rows[0]["id"])
    exact = query("SELECT id FROM runs WHERE id = ?", (text,))
    if exact:
        return str(exact[0]["id"])
    # literal prefix: a range on the primary key, then an exact comparison of the prefix
    rows = query(
        "SELECT id, type, name, started_at FROM runs WHERE id >= ? AND substr(id, 1, ?) = ?"
        " ORDER BY started_at DESC LIMIT ?",
        (text, len(text), text, _CANDIDATES + 1),
    )
    if not rows:
        raise RunNotFoundError(f"no run matches {text!r}; see `hub runs list`")
    if len(rows) > 1:
        shown = ", ".join(_describe(r) for r in rows[:_CANDIDATES])
        more = " and more" if len(rows) > _CANDIDATES else ""
        raise RunNotFoundError(
            f"run id prefix {text!r} is ambiguous: {shown}{more}; give more characters"
        )
    return str(rows[0]["id"])
