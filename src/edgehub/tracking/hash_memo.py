"""Content hashes remembered by the files' stamps, in this process and across `hub` commands.

A compile-cache hit, a rerun or the next run of the same model needs the sha256 of inputs that
have not changed: a 50 MB model and a folder of calibration samples were read again by every
command. A file's hash is remembered with its stamp (device, inode, size, modification time
and change time) and used only while the stamp is the same. The change time is always in it:
the modification time can be set back (``cp -p``, ``touch -r``) and an inode number is reused
by the next file made, so a file swapped for another of the same size and modification time
would keep the stamp without it; the change time moves with every write, rename, link or
``utime`` and nobody can set it. (A file staged by a hard link changes it too: it is hashed
again by the next command, never taken for what it held.)

A file under `SMALL_BYTES` is not remembered: hashing it costs less than reading the memo (a
warm invoke's model, inputs and outputs of a few KiB hash far faster than a full memo loads).
`benchmarks/bench_compile_cache.py` keeps what the memo is for: a compile-cache hit's wall time
against a build. The memo is read only for a larger file, and its entries are checked as
they are used, not all at once.

Only a file that had not changed for `SETTLED_NS` (by this host's clock) when reading began is
remembered: a write in the same tick of the file system's clock could leave the stamp as it was.
A folder is remembered by the names and stamps of all its files, each of them settled.

The memo file (``hashes.json`` in the cache folder, `edgehub.paths.cache_dir`) is written at
exit, at most `MAX_ENTRIES` entries (the newest), through a rename. It is read only where it is a
regular file of this user that nobody else may write (never through a link), and only its
well-formed entries: a memo that does not check out is ignored, and the hashes are taken anew.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import socket
import stat
import threading
from contextlib import suppress
from pathlib import Path

from edgehub.paths import cache_dir

SETTLED_NS = 2_000_000_000
MAX_ENTRIES = 4096
MAX_FILE_BYTES = 4 << 20
SMALL_BYTES = 1 << 20
_HEX = frozenset("0123456789abcdef")


@functools.lru_cache(maxsize=1)
def _host() -> str:
    return socket.gethostname()


def stamp_key(found: os.stat_result) -> str:
    """What identifies a file's version: this host, its device and inode, size, modification
    time and change time (see the module)."""
    return (
        f"{_host()}:{found.st_dev}:{found.st_ino}:{found.st_size}:"
        f"{found.st_mtime_ns}:{found.st_ctime_ns}"
    )


def worth_remembering(found: os.stat_result) -> bool:
    """Whether a file of this stamp is looked up and remembered: a regular file of at least
    `SMALL_BYTES` (a smaller one is hashed: that costs less than reading the memo)."""
    return stat.S_ISREG(found.st_mode) and found.st_size >= SMALL_BYTES


def settled(found: os.stat_result, began_ns: int) -> bool:
    """Whether the file had not changed for `SETTLED_NS` when reading began (neither its
    modification time nor its change time)."""
    return began_ns - max(found.st_mtime_ns, found.st_ctime_ns) > SETTLED_NS


def _sha(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


class HashMemo:
    """Hashes by stamp key (`stamp_key`, or a folder's key); persisted in ``path`` (None: only
    in this process)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._known: dict[str, object] | None = None  # loaded on first use
        self._dirty = False

    def get(self, key: str) -> str | None:
        with self._lock:
            found = self._entries().get(key)
        return found if isinstance(found, str) and _sha(found) else None  # malformed: none

    def put(self, key: str, sha: str) -> None:
        with self._lock:
            known = self._entries()
            if known.get(key) == sha:
                return
            known.pop(key, None)  # the newest last: the oldest go first when trimmed
            known[key] = sha
            if not self._dirty and self.path is not None:
                atexit.register(self.save)
            self._dirty = True

    def _entries(self) -> dict[str, object]:
        if self._known is None:
            self._known = self._load()
        return self._known

    def _load(self) -> dict[str, object]:
        if self.path is None:
            return {}
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return {}
        try:
            found = os.fstat(fd)
            mine = found.st_uid == os.geteuid() and not found.st_mode & 0o022
            if not (stat.S_ISREG(found.st_mode) and mine and found.st_size <= MAX_FILE_BYTES):
                return {}
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = json.loads(handle.read(MAX_FILE_BYTES + 1))
        except (OSError, ValueError):
            return {}
        finally:
            os.close(fd)
        entries = raw.get("hashes") if isinstance(raw, dict) and raw.get("version") == 1 else None
        return entries if isinstance(entries, dict) else {}  # each entry checked where used

    def save(self) -> None:
        """Write the memo (the newest `MAX_ENTRIES`) where something was added, in a folder of
        this user's that nobody else may write, by a rename over whatever is there (a link is
        replaced, never followed); never raises: a cache, taken anew where it is missing."""
        with self._lock:
            if not self._dirty or self.path is None or self._known is None:
                return
            kept = [(k, v) for k, v in self._known.items() if _sha(v)][-MAX_ENTRIES:]
            self._dirty = False
        folder = self.path.parent
        temp = folder / f".{self.path.name}.{os.getpid()}.{os.urandom(4).hex()}"
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            found = os.lstat(folder)
            mine = stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid()
            if not mine or found.st_mode & 0o022:
                return
            text = json.dumps({"version": 1, "hashes": dict(kept)}, separators=(",", ":"))
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(temp, flags, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode())
            os.replace(temp, self.path)
        except OSError:
            with suppress(OSError):
                temp.unlink()


_memo: HashMemo | None = None


def memo() -> HashMemo:
    """This process's memo (its file read on first use)."""
    global _memo
    if _memo is None:
        _memo = HashMemo(cache_dir() / "hashes.json")
    return _memo
