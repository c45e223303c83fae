"""Reading an untrusted bundle: every member's header checked within limits, the files staged,
then the manifest, artifacts, image locks and runs checked before anything is written."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import tarfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from edgehub.errors import UsageError
from edgehub.limits import BundleLimits
from edgehub.runners.tar_members import MAX_HEADER, BoundedReads, MemberRules, list_members
from edgehub.tracking.artifacts import hash_path
from edgehub.tracking.bundles.format import (
    ARTIFACT_COLUMNS,
    COLUMN_TYPES,
    FORMAT,
    IMAGE_DIR,
    IMAGE_FILES,
    MANIFEST,
    RUN_COLUMNS,
    RUN_ID,
    SHA,
    TABLES,
    VERSION,
    ImageLock,
)
from edgehub.tracking.staging import make_staging

# -- reading -----------------------------------------------------------------------------------

__all__ = ["StagedBundle", "read_bundle"]

_CHUNK = 1 << 20
_MAX_JSON = 64 << 20  # the manifest or one run's rows


def _bundle_member(member: tarfile.TarInfo) -> str | None:
    """Why a member whose name and kind passed the common rules is not one a bundle holds."""
    name = member.name
    parts = PurePosixPath(name).parts
    if member.isdir() or name == MANIFEST:
        return None
    if len(parts) == 2 and parts[0] == "runs" and parts[1].endswith(".json"):
        return None if RUN_ID.fullmatch(parts[1][:-5]) else f"{name!r} is not a run file"
    if len(parts) >= 3 and parts[0] == "artifacts" and SHA.fullmatch(parts[1]):
        return None
    if len(parts) == 3 and parts[0] == "images" and parts[2] in IMAGE_FILES:
        return None if IMAGE_DIR.fullmatch(parts[1]) else f"{name!r} is not an image lock"
    return f"{name!r} is not a member of a run bundle"


class _Reader:
    """One bundle being staged and checked; ``refuse`` makes the one-line error."""

    def __init__(self, path: Path, limits: BundleLimits) -> None:
        self.path = path
        self.limits = limits
        self.files: dict[str, tuple[str, int]] = {}  # name -> (sha256, size)

    def refuse(self, why: str) -> UsageError:
        return UsageError(f"refusing bundle {self.path}: {why}; nothing was imported")

    def _open(self, staging: Path) -> tuple[BinaryIO, BinaryIO]:
        try:
            raw: BinaryIO = self.path.open("rb")
        except OSError as error:
            raise UsageError(
                f"cannot read bundle {self.path}: {error.strerror or error}"
            ) from error
        magic = raw.read(4)
        raw.seek(0)
        if magic.startswith(b"\x28\xb5\x2f\xfd"):
            with raw:
                plain = self._unzstd(raw, staging.with_name(f"{staging.name}.tar"))
            return plain, plain
        if magic.startswith(b"\x1f\x8b"):
            return raw, gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
        return raw, raw

    def _unzstd(self, raw: BinaryIO, target: Path) -> BinaryIO:
        """A zstd bundle decompressed to ``target`` (no more than its files' limit and headers
        allow), opened for reading and already unlinked."""
        try:
            import zstandard
        except ImportError:
            raise self.refuse(
                "it is zstd-compressed and the zstandard module is not installed (pip install "
                "zstandard)"
            ) from None
        # the files, a header and padding per member, one long header, the end of the archive
        cap = self.limits.max_bytes + 2048 * self.limits.max_files + MAX_HEADER + _CHUNK
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.fdopen(os.open(target, flags, 0o600), "w+b")
        target.unlink()
        written = 0
        try:
            with zstandard.ZstdDecompressor().stream_reader(raw) as stream:
                while chunk := stream.read(_CHUNK):
                    written += len(chunk)
                    if written > cap:
                        raise self.refuse(f"it decompresses to more than {cap} bytes")
                    handle.write(chunk)
        except zstandard.ZstdError as error:
            handle.close()
            raise self.refuse(f"it is not readable zstd ({error})") from error
        except BaseException:
            handle.close()
            raise
        handle.seek(0)
        return handle

    def stage(self, staging: Path) -> None:
        """Check every member's header, then write the files under ``staging``."""
        raw, stream = self._open(staging)
        try:
            rules = self.rules()
            reads = BoundedReads(stream, rules.over)
            with tarfile.open(fileobj=reads, mode="r:") as tar:  # type: ignore[call-overload]
                members = list_members(tar, rules)
                for member in members:
                    if member.isreg():
                        self._write(tar, member, staging)
        except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as error:
            raise self.refuse(f"it is not a readable tar archive ({error})") from error
        except OSError as error:  # e.g. a file and a folder of one name
            raise self.refuse(f"it cannot be staged ({error.strerror or error})") from error
        finally:
            stream.close()
            raw.close()

    def rules(self) -> MemberRules:
        """A bundle's rules: files and folders only, named as `hub runs export` names them."""
        return MemberRules(
            self.limits, refuse=self.refuse, over=self.refuse, place="the bundle", links=False,
            strict_names=True, unique=True, allowed=_bundle_member,
        )  # fmt: skip

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
        wanted = COLUMN_TYPES.get(column, (str, type(None)))
        if not isinstance(run[column], wanted) or isinstance(run[column], bool):
            raise reader.refuse(f"{what}'s {column} is not a {wanted[0].__name__}")
    directory = run["artifact_dir"]
    if directory is not None and not re.fullmatch(r"runs/[^/\\]+", str(directory)):
        raise reader.refuse(f"{what}'s folder {directory!r} is not inside a store")
    for table, columns in TABLES.items():
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
        match = IMAGE_DIR.fullmatch(folder.name)
        assert match is not None, "member names were checked"
        parts = [folder / name for name in IMAGE_FILES]
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


@contextmanager
def read_bundle(
    path: Path, staging_root: Path, limits: BundleLimits | None = None
) -> Iterator[StagedBundle]:
    """Stage ``path`` in a new folder under ``staging_root`` and yield it checked, as a
    `StagedBundle`; the folder is removed on leaving the block."""
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
