"""Entry points of a group, remembered between processes while the installed packages stay.

Reading entry points means importing `importlib.metadata` and scanning every distribution on
``sys.path``: tens of milliseconds that every ``hub`` command would pay. The list is kept in
``~/.cache/edgehub/entry-points.json`` for each of the last few ``sys.path`` layouts, under a
key made of each entry's modification time, which changes whenever a package is installed,
upgraded or removed there (pip creates and deletes ``*.dist-info`` folders). Any doubt (no
cache, another key, an unreadable file) means a fresh scan.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["entry_point_list"]

Point = tuple[str, str, str]  # (name, value, distribution)
_METADATA = (".dist-info", ".egg-info")
_LAYOUTS = 8  # sys.path layouts remembered (the `hub` script, `python -m`, a test's, ...)


def entry_point_list(group: str, warn: Callable[[str], None]) -> list[Point]:
    """Every entry point of ``group`` as ``(name, value, distribution)``, in scan order;
    ``warn`` hears of a scan that failed (a broken metadata file), which gives none."""
    key = _key()
    cache = _cache_file()
    layouts = _read(cache)
    entry = layouts.get(json.dumps(sys.path))
    groups = entry.get("groups") if isinstance(entry, dict) and entry.get("key") == key else None
    if isinstance(groups, dict) and isinstance(groups.get(group), list):
        return [(str(n), str(v), str(d)) for n, v, d in groups[group]]
    try:
        points = _scan(group)
    except Exception as error:  # a broken metadata file somewhere on sys.path
        warn(f"cannot read the {group!r} entry points: {error}")
        return []
    groups = dict(groups or {})
    groups[group] = points
    layouts.pop(json.dumps(sys.path), None)
    layouts[json.dumps(sys.path)] = {"key": key, "groups": groups}
    _write(cache, dict(list(layouts.items())[-_LAYOUTS:]))
    return points


def _scan(group: str) -> list[Point]:
    from importlib.metadata import entry_points

    return [
        (point.name, point.value, getattr(getattr(point, "dist", None), "name", None) or "?")
        for point in entry_points(group=group)
    ]


def _key() -> list[object]:
    """What the installed distributions depend on: each ``sys.path`` entry, with its mtime
    where it holds distributions (a folder without any, such as the current one, may change
    freely; one gaining a distribution changes the key)."""
    entries: list[object] = []
    for entry in sys.path:
        path = entry or "."
        try:
            mtime: int | None = os.stat(path).st_mtime_ns
            if os.path.isdir(path) and not any(
                name.endswith(_METADATA) for name in os.listdir(path)
            ):
                mtime = None
        except OSError:
            mtime = None
        entries.append([entry, mtime])
    return entries


def _cache_file() -> Path | None:
    """``entry-points.json`` in the checked cache folder; None (no cache: the scan is done
    anew) where it cannot be used, which the first command's own cache use refuses in a line."""
    from edgehub.errors import EdgehubError
    from edgehub.paths import cache_subdir

    try:
        return cache_subdir() / "entry-points.json"
    except (OSError, EdgehubError):
        return None


def _read(cache: Path | None) -> dict[str, object]:
    """The cached layouts: ``sys.path`` (as JSON) -> its key and groups."""
    if cache is None:
        return {}
    try:
        data = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(cache: Path | None, layouts: dict[str, object]) -> None:
    """Replace the cache atomically; a cache that cannot be written is no cache."""
    if cache is None:
        return
    from edgehub.fsutil import atomic_write  # only when the cache is written, not every start

    with contextlib.suppress(OSError):
        atomic_write(cache, json.dumps(layouts).encode("utf-8"), new_mode=0o600)
