"""Run bundles: runs with their stored artifacts and image locks in one tar file, to move
between stores (`hub runs export` / `hub runs import`).

A bundle holds ``edgehub-bundle.json`` (format, version, and the sha256 and size of every other
member), ``runs/<run id>.json`` (the run's rows of every table, paths relative to the store),
``artifacts/<sha256>/<file name>`` (each stored artifact once, by content) and
``images/<image tag>/{Dockerfile,requirements.lock}`` (what built the image a run used, where
known). It is a plain tar, or gzip-compressed when its name ends in ``.gz`` or ``.tgz``.

Reading a bundle trusts nothing in it: only regular files under those names are accepted (no
links, devices, FIFOs, absolute names or ``..``), within count, size and header limits; every
file is staged in the store's unfinished-copy folder and checked against the manifest, every
artifact against its hash, every image lock against its tag, and every run against what the
store already holds, before anything is written. Then artifacts go in first and all the rows
in one transaction, so a refused bundle leaves the store as it was.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import tarfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from edgehub.errors import UsageError
from edgehub.limits import env_size
from edgehub.tracking.artifacts import hash_path
from edgehub.tracking.staging import make_staging

__all__ = [
    "BundleContents",
    "BundleLimits",
    "ImageLock",
    "ImportResult",
    "read_bundle",
    "run_rows",
    "write_bundle",
]

FORMAT = "edgehub-bundle"
VERSION = 1
MANIFEST = "edgehub-bundle.json"

RUN_COLUMNS = (
    "id", "project", "name", "type", "component", "status", "parent_id", "started_at",
    "ended_at", "host", "pid", "artifact_dir", "output_type", "error", "device", "runtime",
    "model_sha256",
)  # fmt: skip
ARTIFACT_COLUMNS = (
    "id", "run_id", "name", "file_name", "sha256", "size", "path", "device", "logged_at",
)  # fmt: skip
_TABLES = {
    "params": ("run_id", "name", "value", "logged_at"),
    "metrics": ("run_id", "name", "step", "value", "logged_at"),
    "tags": ("run_id", "name", "value"),
    "environment": ("run_id", "key", "value"),
}
_COLUMN_TYPES: dict[str, tuple[type, ...]] = {
    **{c: (str,) for c in ("id", "project", "name", "type", "status")},
    "started_at": (int, float),
    "ended_at": (int, float, type(None)),
    "pid": (int, type(None)),
}
_SECRET = re.compile(r"pass(word)?|secret|token|api_?key|credential|private_?key", re.I)
_RUN_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
_SHA = re.compile(r"[0-9a-f]{64}")
_IMAGE_DIR = re.compile(r"(edgehub-[a-z0-9-]+)_([0-9a-f]{12})")
_IMAGE_FILES = ("Dockerfile", "requirements.lock")
_CHUNK = 1 << 20
_MAX_HEADER = 1 << 20  # one tar header (a long name, pax records)
_MAX_JSON = 64 << 20  # the manifest or one run's rows


@dataclass(frozen=True)
class BundleLimits:
    """Caps on a bundle being imported: its files' total size, one file's size, the number
    of members and the depth of their paths; each raised by an environment variable."""

    max_bytes: int = 16 << 30
    max_member_bytes: int = 8 << 30
    max_members: int = 100_000
    max_depth: int = 32

    @classmethod
    def from_env(cls) -> BundleLimits:
        return cls(
            max_bytes=env_size("EDGEHUB_BUNDLE_MAX_BYTES", cls.max_bytes),
            max_member_bytes=env_size("EDGEHUB_BUNDLE_MAX_MEMBER_BYTES", cls.max_member_bytes),
            max_members=env_size("EDGEHUB_BUNDLE_MAX_MEMBERS", cls.max_members),
            max_depth=env_size("EDGEHUB_BUNDLE_MAX_DEPTH", cls.max_depth),
        )


@dataclass(frozen=True)
class ImageLock:
    """The Dockerfile and lock file that built image ``tag`` (``edgehub-<runtime>:<12 hex>``)."""

    tag: str
    dockerfile: bytes
    lock: bytes

    @property
    def folder(self) -> str:
        return self.tag.replace(":", "_")


@dataclass
class BundleContents:
    """What goes into a bundle: each run's rows, the stored artifacts by hash, image locks."""

    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    artifacts: dict[str, Path] = field(default_factory=dict)  # "<sha256>/<name>" -> stored copy
    images: dict[str, ImageLock] = field(default_factory=dict)
    dropped_secrets: int = 0


@dataclass
class ImportResult:
    """What an import did: runs added, runs already there, artifacts and image locks added."""

    imported: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    artifacts_added: int = 0
    images_added: list[str] = field(default_factory=list)


# -- exporting ---------------------------------------------------------------------------------


def run_rows(
    query: Callable[[str, tuple[Any, ...]], list[sqlite3.Row]],
    run_id: str,
    scrub: Callable[[str], str],
) -> tuple[dict[str, Any], int]:
    """Run ``run_id``'s rows of every table as JSON-ready data, strings passed through
    ``scrub`` (local paths made relative) and entries named like secrets left out; returns
    the rows and how many entries were left out."""
    (row,) = query("SELECT * FROM runs WHERE id = ?", (run_id,))
    run = {column: row[column] for column in RUN_COLUMNS}
    for column in ("error",):
        if run[column] is not None:
            run[column] = scrub(run[column])
    dropped = 0
    data: dict[str, Any] = {"run": run}
    for table, columns in _TABLES.items():
        kept = []
        for r in query(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY rowid", (run_id,)):
            values = [r[c] for c in columns]
            if table != "metrics" and _SECRET.search(str(values[1])):
                dropped += 1
                continue
            kept.append([scrub(v) if isinstance(v, str) and i > 1 else v
                         for i, v in enumerate(values)])  # fmt: skip
        data[table] = kept
    artifacts = []
    for r in query("SELECT * FROM artifacts WHERE run_id = ? ORDER BY logged_at, rowid", (run_id,)):
        entry = {c: r[c] for c in ARTIFACT_COLUMNS}
        if entry["device"] is None:
            entry["path"] = scrub(entry["path"])
            if entry["path"].startswith("/"):  # not stored, and outside the places scrubbed
                entry["path"] = entry["file_name"]
        artifacts.append(entry)
    data["artifacts"] = artifacts
    return data, dropped


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = int(mtime)
    tar.addfile(info, io.BytesIO(data))


def _artifact_files(key: str, stored: Path) -> Iterable[tuple[str, Path]]:
    base = f"artifacts/{key}"
    if stored.is_dir():
        for child in sorted(p for p in stored.rglob("*") if p.is_file() and not p.is_symlink()):
            yield f"{base}/{child.relative_to(stored).as_posix()}", child
    else:
        yield base, stored


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_bundle(contents: BundleContents, target: Path) -> int:
    """Write ``contents`` to ``target`` (gzip for ``.gz``/``.tgz``) through a temporary file
    beside it; returns the bundle's size in bytes."""
    name = target.name
    if name.endswith(".zst"):
        raise UsageError(
            f"cannot write {target}: zstd needs a module this Python lacks; name the bundle "
            "runs.tar or runs.tar.gz"
        )
    mode = "w:gz" if name.endswith((".gz", ".tgz")) else "w"
    now = time.time()
    files: dict[str, dict[str, Any]] = {}
    temporary = target.with_name(f".{name}.partial-{os.getpid()}")
    if not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: no folder {target.parent}; create it first")
    try:
        with tarfile.open(temporary, mode) as tar:  # type: ignore[call-overload]
            members: list[tuple[str, bytes | Path]] = []
            for run_id, rows in sorted(contents.runs.items()):
                members.append((f"runs/{run_id}.json", json.dumps(rows, indent=1).encode()))
            for image in contents.images.values():
                members.append((f"images/{image.folder}/Dockerfile", image.dockerfile))
                members.append((f"images/{image.folder}/requirements.lock", image.lock))
            for key, stored in sorted(contents.artifacts.items()):
                members.extend(_artifact_files(key, stored))
            for member, source in members:
                if isinstance(source, bytes):
                    files[member] = {"sha256": hashlib.sha256(source).hexdigest(),
                                     "size": len(source)}  # fmt: skip
                    _add_bytes(tar, member, source, now)
                else:
                    files[member] = {"sha256": _hash_file(source), "size": source.stat().st_size}
                    info = tar.gettarinfo(str(source), arcname=member)
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mode = 0o644
                    with source.open("rb") as handle:
                        tar.addfile(info, handle)
            manifest = {"format": FORMAT, "version": VERSION, "created_at": now,
                        "runs": sorted(contents.runs), "files": files}  # fmt: skip
            _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1).encode(), now)
        os.replace(temporary, target)
    except OSError as error:
        raise UsageError(f"cannot write {target}: {error.strerror or error}") from error
    finally:
        temporary.unlink(missing_ok=True)
    return target.stat().st_size


# -- reading -----------------------------------------------------------------------------------


class _Bounded:
    """A file as tarfile reads it, with no single read over `_MAX_HEADER` bytes: only a header
    (a long name, pax records) asks for more, and one that large is refused."""

    def __init__(self, raw: BinaryIO, refuse: Callable[[str], UsageError]) -> None:
        self._raw = raw
        self._refuse = refuse

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > _MAX_HEADER:
            raise self._refuse("one of its tar headers is over 1 MiB")
        return self._raw.read(size)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return int(self._raw.seek(offset, whence))

    def tell(self) -> int:
        return int(self._raw.tell())


def _member_kind(member: tarfile.TarInfo, name: str) -> str | None:
    """Why ``member`` may not be in a bundle (``None``: it may)."""
    if member.issym() or member.islnk():
        return f"{name!r} is a link ({member.linkname!r}); bundles hold only files"
    if member.ischr() or member.isblk() or member.isfifo():
        return f"{name!r} is a device or FIFO"
    if not (member.isreg() or member.isdir()):
        return f"{name!r} is not a regular file"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return f"{name!r} is an absolute path"
    parts = PurePosixPath(name).parts
    if ".." in parts or "\\" in name or "\0" in name:
        return f"{name!r} leaves the bundle ('..')"
    if member.isdir():
        return None
    if name == MANIFEST:
        return None
    if len(parts) == 2 and parts[0] == "runs" and parts[1].endswith(".json"):
        return None if _RUN_ID.fullmatch(parts[1][:-5]) else f"{name!r} is not a run file"
    if len(parts) >= 3 and parts[0] == "artifacts" and _SHA.fullmatch(parts[1]):
        return None
    if len(parts) == 3 and parts[0] == "images" and parts[2] in _IMAGE_FILES:
        return None if _IMAGE_DIR.fullmatch(parts[1]) else f"{name!r} is not an image lock"
    return f"{name!r} is not a member of a run bundle"


class _Reader:
    """One bundle being staged and checked; ``refuse`` makes the one-line error."""

    def __init__(self, path: Path, limits: BundleLimits) -> None:
        self.path = path
        self.limits = limits
        self.files: dict[str, tuple[str, int]] = {}  # name -> (sha256, size)

    def refuse(self, why: str) -> UsageError:
        return UsageError(f"refusing bundle {self.path}: {why}; nothing was imported")

    def _open(self) -> tuple[BinaryIO, BinaryIO]:
        try:
            raw: BinaryIO = self.path.open("rb")
        except OSError as error:
            raise UsageError(
                f"cannot read bundle {self.path}: {error.strerror or error}"
            ) from error
        magic = raw.read(4)
        raw.seek(0)
        if magic.startswith(b"\x28\xb5\x2f\xfd"):
            raw.close()
            raise self.refuse("it is zstd-compressed, which this Python cannot read")
        if magic.startswith(b"\x1f\x8b"):
            return raw, gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
        return raw, raw

    def stage(self, staging: Path) -> None:
        """Check every member's header, then write the files under ``staging``."""
        raw, stream = self._open()
        try:
            with tarfile.open(fileobj=_Bounded(stream, self.refuse), mode="r:") as tar:  # type: ignore[call-overload]
                members = self._list(tar)
                for member in members:
                    if member.isreg():
                        self._write(tar, member, staging)
        except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib_error()) as error:
            raise self.refuse(f"it is not a readable tar archive ({error})") from error
        except OSError as error:  # e.g. a file and a folder of one name
            raise self.refuse(f"it cannot be staged ({error.strerror or error})") from error
        finally:
            stream.close()
            raw.close()

    def _list(self, tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
        members: list[tarfile.TarInfo] = []
        total = 0
        seen: set[str] = set()
        while (member := tar.next()) is not None:
            members.append(member)
            name = member.name
            if len(members) > self.limits.max_members:
                raise self.refuse(
                    f"it holds more than {self.limits.max_members} members "
                    "(EDGEHUB_BUNDLE_MAX_MEMBERS raises the limit)"
                )
            why = _member_kind(member, name)
            if why is not None:
                raise self.refuse(why)
            if len(PurePosixPath(name).parts) > self.limits.max_depth:
                raise self.refuse(f"{name[:80]!r} is nested too deep")
            if member.isreg():
                if name in seen:
                    raise self.refuse(f"{name!r} is in it twice")
                seen.add(name)
                if member.size > self.limits.max_member_bytes:
                    raise self.refuse(
                        f"{name!r} is {member.size} bytes, over the limit of "
                        f"{self.limits.max_member_bytes} (EDGEHUB_BUNDLE_MAX_MEMBER_BYTES)"
                    )
                total += member.size
                if total > self.limits.max_bytes:
                    raise self.refuse(
                        f"its files are over {self.limits.max_bytes} bytes "
                        "(EDGEHUB_BUNDLE_MAX_BYTES)"
                    )
        return members

    def _write(self, tar: tarfile.TarFile, member: tarfile.TarInfo, staging: Path) -> None:
        path = staging.joinpath(*PurePosixPath(member.name).parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        data = tar.extractfile(member)
        assert data is not None, "a regular member has data"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with data, os.fdopen(os.open(path, flags, 0o644), "wb") as handle:
            while chunk := data.read(_CHUNK):
                size += len(chunk)
                digest.update(chunk)
                handle.write(chunk)
        if size != member.size:
            raise self.refuse(f"{member.name!r} is truncated")
        self.files[member.name] = (digest.hexdigest(), size)


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error


def _load_json(path: Path, what: str, reader: _Reader) -> Any:
    if path.stat().st_size > _MAX_JSON:
        raise reader.refuse(f"{what} is over {_MAX_JSON} bytes")
    try:
        return json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise reader.refuse(f"{what} is not valid JSON ({error})") from error


def _check_manifest(staging: Path, reader: _Reader) -> list[str]:
    if MANIFEST not in reader.files:
        raise reader.refuse(f"it has no {MANIFEST} (not a bundle `hub runs export` wrote)")
    manifest = _load_json(staging / MANIFEST, MANIFEST, reader)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise reader.refuse(f"{MANIFEST} does not describe an {FORMAT}")
    if manifest.get("version") != VERSION:
        raise reader.refuse(
            f"it is of bundle version {manifest.get('version')!r}; this edgehub reads "
            f"version {VERSION}"
        )
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise reader.refuse(f"{MANIFEST} lists no files")
    present = {name for name in reader.files if name != MANIFEST}
    if set(listed) != present:
        odd = sorted(set(listed) ^ present)[0]
        raise reader.refuse(f"{odd!r} is in the bundle or its manifest but not in both")
    for name, (sha, size) in reader.files.items():
        if name == MANIFEST:
            continue
        entry = listed[name]
        if not isinstance(entry, dict) or entry.get("sha256") != sha or entry.get("size") != size:
            raise reader.refuse(f"{name!r} does not match its hash in the manifest (tampered?)")
    runs = manifest.get("runs")
    if not isinstance(runs, list) or sorted(runs) != sorted(
        name[5:-5] for name in present if name.startswith("runs/")
    ):
        raise reader.refuse("its manifest's list of runs does not match its run files")
    return [str(r) for r in runs]


def _check_run(data: Any, run_id: str, artifacts: set[str], reader: _Reader) -> None:
    what = f"run {run_id}"
    if not isinstance(data, dict) or not isinstance(data.get("run"), dict):
        raise reader.refuse(f"{what} has no run record")
    run = data["run"]
    if set(run) != set(RUN_COLUMNS) or run["id"] != run_id:
        raise reader.refuse(f"{what}'s record has the wrong fields or id")
    if run["status"] not in ("FINISHED", "FAILED", "KILLED"):
        raise reader.refuse(f"{what} has status {run['status']!r}; only ended runs move")
    for column in RUN_COLUMNS:
        wanted = _COLUMN_TYPES.get(column, (str, type(None)))
        if not isinstance(run[column], wanted) or isinstance(run[column], bool):
            raise reader.refuse(f"{what}'s {column} is not a {wanted[0].__name__}")
    directory = run["artifact_dir"]
    if directory is not None and not re.fullmatch(r"runs/[^/\\]+", str(directory)):
        raise reader.refuse(f"{what}'s folder {directory!r} is not inside a store")
    for table, columns in _TABLES.items():
        rows = data.get(table)
        if not isinstance(rows, list) or any(
            not isinstance(r, list) or len(r) != len(columns) or r[0] != run_id for r in rows
        ):
            raise reader.refuse(f"{what}'s {table} are malformed")
        for r in rows:
            if not all(isinstance(v, str) for v in r[1 : 3 if table != "metrics" else 2]):
                raise reader.refuse(f"{what}'s {table} are malformed")
            if table == "params":
                try:
                    json.loads(r[2])
                except (ValueError, RecursionError):
                    raise reader.refuse(f"{what}'s param {r[1]!r} is not JSON") from None
            if table == "metrics" and not (
                isinstance(r[3], (int, float)) and isinstance(r[2], (int, type(None)))
            ):
                raise reader.refuse(f"{what}'s metric {r[1]!r} is not a number")
    rows = data.get("artifacts")
    if not isinstance(rows, list):
        raise reader.refuse(f"{what}'s artifacts are malformed")
    for entry in rows:
        if not isinstance(entry, dict) or set(entry) != set(ARTIFACT_COLUMNS):
            raise reader.refuse(f"{what} has a malformed artifact")
        if not (
            isinstance(entry["file_name"], str)
            and isinstance(entry["path"], str)
            and isinstance(entry["size"], int)
            and isinstance(entry["logged_at"], (int, float))
            and isinstance(entry["sha256"], (str, type(None)))
        ):
            raise reader.refuse(f"{what} has a malformed artifact")
        if entry["run_id"] != run_id:
            raise reader.refuse(f"{what} has an artifact of another run")
        path, sha = str(entry["path"]), entry["sha256"]
        if entry["device"] is not None:
            continue
        if path.startswith("/") or ".." in PurePosixPath(path).parts:
            raise reader.refuse(f"{what}'s artifact path {path!r} is outside the store")
        stored = path.startswith("artifacts/")
        if stored and (
            path != f"artifacts/{sha}/{entry['file_name']}" or path[10:] not in artifacts
        ):
            raise reader.refuse(f"{what}'s artifact {path!r} is not in the bundle")


def _check_artifacts(staging: Path, reader: _Reader) -> dict[str, Path]:
    found: dict[str, Path] = {}
    root = staging / "artifacts"
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        for entry in sorted(folder.iterdir()):  # one content may be stored under two names
            if hash_path(entry) != folder.name:
                raise reader.refuse(
                    f"artifact {entry.name!r} does not match its hash {folder.name[:12]} "
                    "(tampered?)"
                )
            found[f"{folder.name}/{entry.name}"] = entry
    return found


def _check_images(staging: Path, reader: _Reader) -> list[ImageLock]:
    locks: list[ImageLock] = []
    root = staging / "images"
    if not root.is_dir():
        return locks
    for folder in sorted(root.iterdir()):
        match = _IMAGE_DIR.fullmatch(folder.name)
        assert match is not None, "member names were checked"
        parts = [folder / name for name in _IMAGE_FILES]
        if not all(p.is_file() for p in parts):
            raise reader.refuse(f"image lock {folder.name} lacks a Dockerfile or lock file")
        dockerfile, lock = (p.read_bytes() for p in parts)
        if hashlib.sha256(dockerfile + lock).hexdigest()[:12] != match.group(2):
            raise reader.refuse(f"image lock {folder.name} does not match its tag (tampered?)")
        locks.append(ImageLock(f"{match.group(1)}:{match.group(2)}", dockerfile, lock))
    return locks


@dataclass
class StagedBundle:
    """A bundle staged and checked: its runs' rows, artifacts and image locks."""

    runs: dict[str, dict[str, Any]]
    artifacts: dict[str, Path]
    images: list[ImageLock]
    refuse: Callable[[str], UsageError]


def read_bundle(path: Path, staging_root: Path, limits: BundleLimits | None = None) -> Any:
    """A context manager staging ``path`` in a new folder under ``staging_root`` and yielding
    the checked `StagedBundle`; the folder is removed on leaving it."""
    from contextlib import contextmanager

    @contextmanager
    def staged() -> Any:
        reader = _Reader(path, limits or BundleLimits.from_env())
        if not path.is_file():
            raise UsageError(f"no bundle at {path}; give the file `hub runs export` wrote")
        staging = make_staging(staging_root)
        try:
            reader.stage(staging)
            run_ids = _check_manifest(staging, reader)
            artifacts = _check_artifacts(staging, reader)
            runs = {}
            for run_id in run_ids:
                data = _load_json(staging / "runs" / f"{run_id}.json", f"run {run_id}", reader)
                _check_run(data, run_id, set(artifacts), reader)
                runs[run_id] = data
            yield StagedBundle(runs, artifacts, _check_images(staging, reader), reader.refuse)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    return staged()


def insert_runs(conn: sqlite3.Connection, runs: Iterable[dict[str, Any]]) -> None:
    """Insert the rows of ``runs`` (as `run_rows` made them) in the open transaction."""
    for data in runs:
        run = data["run"]
        marks = ",".join("?" * len(RUN_COLUMNS))
        conn.execute(
            f"INSERT INTO runs ({','.join(RUN_COLUMNS)}) VALUES ({marks})",
            [run[c] for c in RUN_COLUMNS],
        )
        for table, columns in _TABLES.items():
            conn.executemany(
                f"INSERT INTO {table} ({','.join(columns)}) "
                f"VALUES ({','.join('?' * len(columns))})",
                [list(r) for r in data[table]],
            )
        conn.executemany(
            f"INSERT INTO artifacts ({','.join(ARTIFACT_COLUMNS)}) VALUES "
            f"({','.join('?' * len(ARTIFACT_COLUMNS))})",
            [[a[c] for c in ARTIFACT_COLUMNS] for a in data["artifacts"]],
        )


def same_rows(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two runs' rows say the same (a run imported before, unchanged)."""
    return _canonical(a) == _canonical(b)
