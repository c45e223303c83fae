"""The run store's files are private to their user: folders 0700, files 0600 (0700 where they
were executable), whatever the umask. ``EDGEHUB_STORE_MODE=umask`` keeps the umask's modes
instead, for a store shared with a group on purpose (then set the umask and the folders' group
yourself).

The store's own writers make their files and folders with these modes; `tighten` brings the
store's top folders and database to them when the store is opened, so a store made by an older
release (or under another setting) becomes private too: with its root folder 0700, nothing
below it can be reached by another user, whichever code wrote it.
"""

from __future__ import annotations

import os
import stat
from contextlib import suppress
from pathlib import Path

from edgehub.errors import ConfigError

ENV = "EDGEHUB_STORE_MODE"
_TOP = ("artifacts", "runs", "images", "quarantine")
_FILES = ("runs.db", "runs.db-wal", "runs.db-shm", ".init.lock")


def private() -> bool:
    """Whether the store's files are made private (the default), from `ENV`."""
    text = os.environ.get(ENV, "").strip().lower()
    if text in ("", "private"):
        return True
    if text == "umask":
        return False
    raise ConfigError(
        f"{ENV}={text!r} is not a store mode; use private (the default: only your user can "
        "read the run store) or umask (its files follow your umask)"
    )


def make_private_dir(path: Path) -> None:
    """``mkdir -p path``: each folder made here 0700 (the umask's modes under ``umask``)."""
    mode = 0o700 if private() else 0o777
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=mode)
        except FileExistsError:
            if not folder.is_dir():
                raise


def create_private_file(path: Path) -> None:
    """Make an empty file at ``path`` with mode 0600 where there is none yet (so a database
    that SQLite creates there, and its journal files, which copy its mode, are private)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with suppress(FileExistsError):
        os.close(os.open(path, flags, _file_mode()))


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (not through a link), a new file made 0600."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, _file_mode()), "wb") as handle:
        handle.write(data)


def _file_mode() -> int:
    return 0o600 if private() else 0o666


def _chmod(path: str, found: os.stat_result) -> None:
    wanted = 0o700 if stat.S_ISDIR(found.st_mode) or found.st_mode & 0o111 else 0o600
    if stat.S_IMODE(found.st_mode) != wanted and found.st_uid == os.geteuid():
        os.chmod(path, wanted, follow_symlinks=False)


def restrict(path: Path) -> None:
    """Make ``path``, and all in it where it is a folder, private (links are left alone)."""
    if not private():
        return
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        return
    _chmod(str(path), found)
    if not stat.S_ISDIR(found.st_mode):
        return
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            entry = os.path.join(root, name)
            info = os.lstat(entry)
            if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
                _chmod(entry, info)


def tighten(root: Path) -> None:
    """The store at ``root``: its folder, top folders and database files made private where
    this user owns them and they are not yet (nothing below the top folders is walked)."""
    if not private():
        return
    for path in (root, *(root / name for name in _TOP + _FILES)):
        with suppress(OSError):  # not there, or not ours to change: it stays as it is
            found = os.lstat(path)
            if stat.S_ISDIR(found.st_mode) or stat.S_ISREG(found.st_mode):
                _chmod(str(path), found)
