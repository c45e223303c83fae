"""An imported run's records checked field by field, as anything else that came from outside.

Every value must be one a run of this edgehub records: ids of its form (32 hex digits, so an
imported id can never be another run's short id), a known kind of status, times that are finite
numbers between 2000 and a day from now, counts and steps that fit SQLite's integers, metrics
that are finite, table keys that are unique, and paths only where the store keeps them: a
stored artifact at ``artifacts/<its sha256>/<its file name>`` with that content in the bundle, a
run folder ``runs/<name>``, and a path that was not stored never naming the store's own files
(``runs.db``, other runs' folders...). ``check_run`` returns why a run is refused, or None.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import PurePosixPath
from typing import Any, NoReturn

from edgehub.tracking.bundles.format import ARTIFACT_COLUMNS, RUN_COLUMNS, SHA, TABLES

HEX_ID = re.compile(r"[0-9a-f]{32}")  # `tracking.client.new_run_id`, and artifact ids
_TYPE = re.compile(r"[A-Z][A-Z0-9_]{0,31}")
_ENDED = ("FINISHED", "FAILED", "KILLED")
_EARLIEST = 946684800.0  # 2000-01-01: older times are not of a run this edgehub made
_SKEW_S = 86400.0  # another machine's clock may run ahead, but not by more than a day
_MAX_INT = (1 << 63) - 1
# what the store keeps at its top level: a path that was not stored may name none of them
_STORE_NAMES = frozenset(
    {"runs.db", "runs.db-wal", "runs.db-shm", "artifacts", "runs", "images", "quarantine"}
)


class _Refused(Exception):
    """Why the run is refused (caught in `check_run`)."""


def _fail(why: str) -> NoReturn:
    raise _Refused(why)


def _text(value: Any, what: str, *, optional: bool = False) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        _fail(f"{what} is not text")


def _form(value: Any, form: re.Pattern[str], why: str, *, optional: bool = False) -> None:
    if not (optional and value is None) and not (isinstance(value, str) and form.fullmatch(value)):
        _fail(why)


def _time(value: Any, what: str, now: float, *, after: float = _EARLIEST) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(f"{what} is not a number")
    number = float(value)
    if not math.isfinite(number) or not after <= number <= now + _SKEW_S:
        _fail(f"{what} {value!r} is not a time between {after:.0f} and a day from now")
    return number


def _integer(value: Any, what: str, *, low: int = 0, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_INT:
        _fail(f"{what} {value!r} is not a whole number from {low} to 2^63-1")


def _file_name(value: Any, what: str) -> None:
    _text(value, what)
    if value in ("", ".", "..") or any(c in value for c in "/\\\0"):
        _fail(f"{what} {value!r} is not a file name")


def _check_record(run: dict[str, Any], run_id: str, now: float) -> None:
    if set(run) != set(RUN_COLUMNS) or run["id"] != run_id:
        _fail("its record has the wrong fields or id")
    _form(run_id, HEX_ID, f"its id {run_id!r} is not a run id (32 hex digits)")
    for column in ("project", "name"):
        _text(run[column], column)
    for column in ("component", "host", "output_type", "error", "device", "runtime"):
        _text(run[column], column, optional=True)
    _form(run["type"], _TYPE, f"type {run['type']!r} is not a run type")
    if run["status"] not in _ENDED:
        _fail(f"status {run['status']!r} is not an ended run's; only ended runs move")
    parent = run["parent_id"]
    _form(parent, HEX_ID, f"parent {parent!r} is not a run id", optional=True)
    if parent == run_id:
        _fail("it is its own parent")
    started = _time(run["started_at"], "started_at", now)
    if run["ended_at"] is not None:
        _time(run["ended_at"], "ended_at", now, after=started)
    _integer(run["pid"], "pid", optional=True)
    sha = run["model_sha256"]
    _form(sha, SHA, f"model_sha256 {sha!r} is not a sha256", optional=True)
    folder = run["artifact_dir"]
    if folder is not None:
        _text(folder, "folder")
        parts = folder.split("/")
        if len(parts) != 2 or parts[0] != "runs":
            _fail(f"folder {folder!r} is not a run folder inside a store (runs/<name>)")
        _file_name(parts[1], "folder")


def _check_tables(data: dict[str, Any], run_id: str, now: float) -> None:
    for table, columns in TABLES.items():
        rows = data.get(table)
        if not isinstance(rows, list):
            _fail(f"its {table} are not a list")
        keys: set[str] = set()
        for row in rows:
            if not isinstance(row, list) or len(row) != len(columns) or row[0] != run_id:
                _fail(f"its {table} hold a row of another shape or run")
            _text(row[1], f"a name in its {table}")
            if table == "metrics":
                _integer(row[2], f"metric {row[1]!r}'s step", low=-_MAX_INT, optional=True)
                value = row[3]
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    _fail(f"metric {row[1]!r} is not a number")
                if not math.isfinite(float(value)):
                    _fail(f"metric {row[1]!r} is {value!r}, not a finite number")
                _time(row[4], f"metric {row[1]!r}'s time", now)
                continue
            _text(row[2], f"{table} {row[1]!r}'s value")
            if row[1] in keys:
                _fail(f"its {table} hold {row[1]!r} twice")
            keys.add(row[1])
            if table == "params":
                try:
                    json.loads(row[2])
                except (ValueError, RecursionError):
                    _fail(f"param {row[1]!r} is not JSON")
                _time(row[3], f"param {row[1]!r}'s time", now)


def _check_artifacts(rows: Any, run: dict[str, Any], sizes: dict[str, int], now: float) -> None:
    if not isinstance(rows, list):
        _fail("its artifacts are not a list")
    own = f"{run['artifact_dir']}/" if run["artifact_dir"] else None
    for entry in rows:
        if not isinstance(entry, dict) or set(entry) != set(ARTIFACT_COLUMNS):
            _fail("it has an artifact of other fields")
        if entry["run_id"] != run["id"]:
            _fail("it has an artifact of another run")
        ident = entry["id"]
        _form(ident, HEX_ID, f"artifact id {ident!r} is not an artifact id (32 hex digits)")
        name = entry["file_name"]
        _file_name(name, "an artifact's file name")
        _text(entry["name"], f"artifact {name!r}'s name", optional=True)
        _text(entry["device"], f"artifact {name!r}'s device", optional=True)
        _text(entry["path"], f"artifact {name!r}'s path")
        _integer(entry["size"], f"artifact {name!r}'s size")
        _time(entry["logged_at"], f"artifact {name!r}'s time", now)
        sha, path = entry["sha256"], entry["path"]
        _form(sha, SHA, f"artifact {name!r}'s sha256 {sha!r} is not a sha256", optional=True)
        if entry["device"] is not None:
            continue  # a path on a device: a record, never read here
        if sha is not None:
            if path != f"artifacts/{sha}/{name}":
                _fail(
                    f"artifact path {path!r} is outside the store's artifact area (a stored "
                    f"{name!r} is at artifacts/<its sha256>/{name})"
                )
            if sizes.get(f"{sha}/{name}") != entry["size"]:
                _fail(f"artifact {path!r} is not in the bundle at its recorded size")
            continue
        parts = PurePosixPath(path).parts
        if (
            not parts
            or path.startswith("/")
            or ".." in parts
            or "\\" in path
            or "\0" in path
            or (parts[0] in _STORE_NAMES and not (own and path.startswith(own)))
            or parts[0].startswith(".")
        ):
            _fail(f"artifact path {path!r} is outside the store's artifact area")


def check_run(
    data: Any, run_id: str, sizes: dict[str, int], now: float | None = None
) -> str | None:
    """Why the rows ``data`` of run ``run_id`` (as `run_rows` made them) are refused, or None;
    ``sizes``: the bundle's artifacts, ``"<sha256>/<file name>"`` to their size."""
    moment = time.time() if now is None else now
    try:
        if not isinstance(data, dict) or not isinstance(data.get("run"), dict):
            _fail("it has no run record")
        _check_record(data["run"], run_id, moment)
        _check_tables(data, run_id, moment)
        _check_artifacts(data.get("artifacts"), data["run"], sizes, moment)
    except _Refused as refused:
        return str(refused)
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as error:
        return f"its records are malformed ({type(error).__name__})"
    return None
