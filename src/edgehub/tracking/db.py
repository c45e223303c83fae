"""Opening the store's SQLite database, and turning storage failures into `StorageError`.

A store opens read-write when it can. When it cannot (read-only file or directory, read-only
file system), it opens read-only, and if even that fails because SQLite cannot create its
shared-memory file, immutable: reading the history works whenever the database file can be read.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from edgehub.errors import StorageError

T = TypeVar("T")

_FREE_SPACE = (
    "free space on that file system, or move the store ([project] store in hub.toml, or "
    "EDGEHUB_STORE), and run the command again; the store is intact"
)
_WRITABLE_PLACE = (
    "give your user write access to it (chmod u+w, or chown), or set [project] store in "
    "hub.toml (or EDGEHUB_STORE) to a writable place"
)


class Problem:
    """What is wrong with the store's files, and what the user can do about it.

    (This module's records are plain classes: they are made on every command's way to the
    store, and a dataclass costs that import more than the class is worth.)"""

    __slots__ = ("advice", "what")

    def __init__(self, what: str, advice: str) -> None:
        self.what = what
        self.advice = advice

    def __repr__(self) -> str:
        return f"Problem(what={self.what!r}, advice={self.advice!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return (self.what, self.advice) == (other.what, other.advice)

    def __hash__(self) -> int:
        return hash((self.what, self.advice))

    def error(self, doing: str) -> StorageError:
        return StorageError(f"cannot {doing}: {self.what}; {self.advice}")


class Database:
    """An open connection and, when it is read-only, why."""

    __slots__ = ("conn", "path", "read_only")

    def __init__(
        self, conn: sqlite3.Connection, path: Path, read_only: Problem | None = None
    ) -> None:
        self.conn = conn
        self.path = path
        self.read_only = read_only

    @property
    def writable(self) -> bool:
        return self.read_only is None


def _space_left(path: Path) -> int | None:
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def diagnose(error: BaseException, path: Path) -> Problem:
    """The `Problem` behind an OS or SQLite failure on ``path``."""
    code = getattr(error, "errno", None)
    text = str(error).lower()
    full = code == errno.ENOSPC or "disk is full" in text or "disk full" in text
    if full or ("disk i/o error" in text and (_space_left(path) or 0) < 256 * 1024):
        return Problem(f"the disk holding {path} is full", _FREE_SPACE)
    if code == errno.EDQUOT:
        return Problem(f"your disk quota is used up at {path}", _FREE_SPACE)
    if code == errno.EROFS or "read-only file system" in text:
        return Problem(
            f"{path} is on a read-only file system",
            "mount it read-write, or set [project] store in hub.toml (or EDGEHUB_STORE) to "
            "a writable place",
        )
    if code in (errno.EACCES, errno.EPERM) or "readonly database" in text:
        return Problem(f"no permission to write {path}", _WRITABLE_PLACE)
    if "locked" in text or "busy" in text:
        return Problem(
            f"the run store {path} is locked by another process (another `hub` still writing?)",
            "wait for it to finish, or find it with `fuser` and stop it",
        )
    if isinstance(error, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text
    ):
        return Problem(
            f"{path} is not a readable run store ({error})",
            f"it is damaged: keep a copy, then recover what can be read (sqlite3 {path} "
            f".recover | sqlite3 {path.with_name('recovered.db')}, and put recovered.db in "
            f"its place), or move {path.name} and its -wal and -shm files aside to start a "
            "new store",
        )
    detail = os.strerror(code) if isinstance(code, int) else str(error)
    return Problem(f"{detail} at {path}", "check the file system and the permissions there")


def _read_only_mount(folder: Path) -> Problem | None:
    with suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return diagnose(OSError(errno.EROFS, "read-only file system"), folder)
    return None


def unwritable_folder(folder: Path) -> Problem:
    """Why ``folder`` of the store cannot be written: a read-only mount, else its modes."""
    return _read_only_mount(folder) or Problem(
        f"the store directory {folder} is not writable", _WRITABLE_PLACE
    )


def storage_error(error: BaseException, path: Path, doing: str) -> StorageError:
    """A one-line `StorageError` for an OS or SQLite failure on ``path`` while ``doing``."""
    return diagnose(error, path).error(doing)


@contextmanager
def translate_storage_errors(path: Path, doing: str) -> Iterator[None]:
    """Raise OS and SQLite failures inside the block as `StorageError`s naming ``path``."""
    try:
        yield
    except (OSError, sqlite3.DatabaseError) as error:
        raise storage_error(error, path, doing) from error


def _pid_alive(pid: int | None) -> int:
    """1 if process ``pid`` of this host exists (or cannot be known), else 0 (SQL function)."""
    if pid is None or pid <= 0:
        return 1
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        return 1
    except (OverflowError, ValueError):
        return 0
    return 1


def configure(conn: sqlite3.Connection, patience_s: float) -> sqlite3.Connection:
    conn.execute(f"PRAGMA busy_timeout={int(patience_s * 1000)}")
    conn.create_function("edgehub_pid_alive", 1, _pid_alive, deterministic=False)
    return conn


def _why_read_only(path: Path) -> Problem | None:
    """Why the database cannot be written, as far as we can tell without trying."""
    folder = path.parent
    if path.exists() and not os.access(path, os.W_OK):
        return _read_only_mount(folder) or Problem(
            f"the database file {path} is read-only", _WRITABLE_PLACE
        )
    if not os.access(folder, os.W_OK):
        return unwritable_folder(folder)
    return None


def _connect(uri: str, patience_s: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        uri, uri=True, timeout=patience_s, check_same_thread=False, isolation_level=None
    )
    return configure(conn, patience_s)


OPENED_READ_ONLY = Problem("the store was opened read-only", "open it without read_only")


def open_database(path: Path, *, patience_s: float, read_only: Problem | None = None) -> Database:
    """Open ``path`` read-write if possible, else read-only (``mode=ro``, then ``immutable``).

    ``read_only`` forces a read-only open and says why."""
    reason = read_only or _why_read_only(path)
    file_uri = "file:" + quote(str(path))
    if reason is None:
        return Database(_connect(file_uri, patience_s), path)
    if not path.exists():
        raise reason.error(f"create the run store database {path}")
    for mode in ("mode=ro", "immutable=1"):
        conn = _connect(f"{file_uri}?{mode}", patience_s)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn.close()
            continue
        return Database(conn, path, reason)
    raise reason.error(f"read the run store {path} (opening it read-only failed too)")


def retry_while_locked(action: Callable[[], T], patience_s: float) -> T:
    """Run ``action``, retrying "database is locked" for up to ``patience_s`` (the journal-mode
    switch of a new database does not wait on the busy timeout)."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return action()
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
