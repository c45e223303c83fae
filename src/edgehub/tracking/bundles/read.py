"""Reading an untrusted bundle in two passes over its (decompressed) stream, nothing spooled.

The first pass reads member headers, each checked, up to the manifest (a bundle this edgehub
writes holds it first) and checks it: its names, sizes and hashes, the count and total within
the limits, and room for them on the store's disk. The second pass stages the files: each
member is checked against the manifest (listed, of its declared size) before a byte of it is
written, its bytes are counted as they stream and hashed, and a mismatch refuses at once.
Every decompressed byte either pass reads is counted against a cap (the limits, then the
manifest's total), so a deflate bomb stops before it is written anywhere. Then the manifest,
artifacts, image locks and runs (`validate`) are checked before anything reaches the store."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, cast

from edgehub.errors import UsageError
from edgehub.limits import BundleLimits, human_size
from edgehub.runners.tar_members import MAX_HEADER, BoundedReads, MemberRules, iter_members
from edgehub.tracking.artifacts import hash_path, path_size
from edgehub.tracking.bundles.format import (
    FORMAT,
    IMAGE_DIR,
    IMAGE_FILES,
    MANIFEST,
    RUN_ID,
    SHA,
    VERSION,
    ImageLock,
)
from edgehub.tracking.bundles.validate import check_run
from edgehub.tracking.staging import make_staging
from edgehub.user_files import ensure_room

_CHUNK = 1 << 20
_MAX_JSON = 64 << 20  # the manifest or one run's rows
_PER_MEMBER = 4096  # a member's header, pax records and padding, as `hub runs export` writes
_TAIL = 2 * MAX_HEADER + 20480  # one long header, and the end-of-archive records


def _bundle_member(member: tarfile.TarInfo) -> str | None:
    """Why a member whose name and kind passed the common rules is not one a bundle holds."""
    name = member.name
    parts = PurePosixPath(name).parts
    if member.issparse():
        return f"{name!r} is a sparse file (its size is not in the bundle)"
    if member.isdir() or name == MANIFEST:
        return None
    if len(parts) == 2 and parts[0] == "runs" and parts[1].endswith(".json"):
        return None if RUN_ID.fullmatch(parts[1][:-5]) else f"{name!r} is not a run file"
    if len(parts) >= 3 and parts[0] == "artifacts" and SHA.fullmatch(parts[1]):
        return None
    if len(parts) == 3 and parts[0] == "images" and parts[2] in IMAGE_FILES:
        return None if IMAGE_DIR.fullmatch(parts[1]) else f"{name!r} is not an image lock"
    return f"{name!r} is not a member of a run bundle"


class _Counted:
    """A decompressed stream as `tarfile` reads it, forward only: every byte counted (seeking
    forward reads through), and refused past ``cap``."""

    def __init__(self, stream: BinaryIO, cap: int, over: Callable[[str], Exception]) -> None:
        self._stream = stream
        self._over = over
        self.cap = cap
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._stream.read(size if 0 <= size <= _CHUNK else _CHUNK)
        self.count += len(data)
        if self.count > self.cap:
            raise self._over(f"it decompresses to more than {human_size(self.cap)}")
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        target = offset if whence == os.SEEK_SET else self.count + offset
        if whence not in (os.SEEK_SET, os.SEEK_CUR) or target < self.count:
            raise self._over("it cannot be read front to back (a seek backwards)")
        while self.count < target and self.read(min(_CHUNK, target - self.count)):
            pass
        return self.count

    def tell(self) -> int:
        return self.count


@dataclass(frozen=True)
class _Manifest:
    """The checked manifest: each file's (sha256, size), the runs, and its own size."""

    files: dict[str, tuple[str, int]]
    runs: list[str]
    size: int

    @property
    def total(self) -> int:
        return sum(size for _, size in self.files.values())


class _Reader:
    """One bundle being staged and checked; ``refuse`` makes the one-line error."""

    def __init__(self, path: Path, limits: BundleLimits) -> None:
        self.path = path
        self.limits = limits
        self._errors: tuple[type[BaseException], ...] = (
            tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error,
        )  # fmt: skip

    def refuse(self, why: str) -> UsageError:
        return UsageError(f"refusing bundle {self.path}: {why}; nothing was imported")

    def rules(self) -> MemberRules:
        """A bundle's rules: files and folders only, named as `hub runs export` names them."""
        return MemberRules(
            self.limits, refuse=self.refuse, over=self.refuse, place="the bundle", links=False,
            strict_names=True, unique=True, allowed=_bundle_member,
        )  # fmt: skip

    def _decompressed(self, raw: BinaryIO) -> BinaryIO:
        raw.seek(0)
        magic = raw.read(4)
        raw.seek(0)
        if magic.startswith(b"\x28\xb5\x2f\xfd"):
            try:
                import zstandard
            except ImportError:
                raise self.refuse(
                    "it is zstd-compressed and the zstandard module is not installed (pip "
                    "install zstandard)"
                ) from None
            self._errors = (*self._errors, zstandard.ZstdError)
            reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=False)
            return cast("BinaryIO", reader)  # typed or not: whether zstandard is installed
        if magic.startswith(b"\x1f\x8b"):
            return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
        return raw

    @contextmanager
    def _members(
        self, raw: BinaryIO, cap: int
    ) -> Iterator[tuple[tarfile.TarFile, Iterator[tarfile.TarInfo], _Counted]]:
        """The bundle's members from the start, each checked before it is yielded."""
        stream = self._decompressed(raw)
        counted = _Counted(stream, cap, self.refuse)
        try:
            reads = BoundedReads(counted, self.refuse)  # type: ignore[arg-type]
            with tarfile.open(fileobj=reads, mode="r:") as tar:  # type: ignore[call-overload]
                yield tar, iter_members(tar, self.rules()), counted
        except self._errors as error:
            raise self.refuse(f"it is not a readable tar archive ({error})") from error
        except OSError as error:  # e.g. a file and a folder of one name
            raise self.refuse(f"it cannot be staged ({error.strerror or error})") from error
        finally:
            if stream is not raw:
                stream.close()

    def _cap(self) -> int:
        """What the limits let the stream decompress to before the manifest is known."""
        return self.limits.max_bytes + _PER_MEMBER * self.limits.max_files + _TAIL

    def manifest(self, raw: BinaryIO) -> _Manifest:
        """First pass: headers checked up to the manifest, which is read and checked."""
        with self._members(raw, self._cap()) as (tar, members, counted):
            for member in members:
                if member.name != MANIFEST or not member.isreg():
                    continue
                if member.size > _MAX_JSON:
                    raise self.refuse(f"{MANIFEST} is over {human_size(_MAX_JSON)}")
                data = tar.extractfile(member)
                assert data is not None, "a regular member has data"
                with data:
                    text = data.read(member.size)
                return self._check_manifest(text)
            while counted.read(_CHUNK):  # past the archive's end: within the cap all the same
                pass
        raise self.refuse(f"it has no {MANIFEST} (not a bundle `hub runs export` wrote)")

    def _check_manifest(self, text: bytes) -> _Manifest:
        try:
            manifest = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            raise self.refuse(f"{MANIFEST} is not valid JSON ({error})") from error
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise self.refuse(f"{MANIFEST} does not describe an {FORMAT}")
        if manifest.get("version") != VERSION:
            raise self.refuse(
                f"it is of bundle version {manifest.get('version')!r}; this edgehub reads "
                f"version {VERSION}"
            )
        listed, runs = manifest.get("files"), manifest.get("runs")
        if not isinstance(listed, dict) or not isinstance(runs, list):
            raise self.refuse(f"{MANIFEST} lists no files or no runs")
        files: dict[str, tuple[str, int]] = {}
        for name, entry in listed.items():
            sha = entry.get("sha256") if isinstance(entry, dict) else None
            size = entry.get("size") if isinstance(entry, dict) else None
            if not (isinstance(sha, str) and SHA.fullmatch(sha)) or not (
                type(size) is int and 0 <= size <= self.limits.max_member_bytes
            ):
                raise self.refuse(
                    f"{MANIFEST} gives {name[:80]!r} no sha256, or a size that is not a whole "
                    f"number up to {human_size(self.limits.max_member_bytes)} (raise "
                    f"{self.limits.variable('member_bytes')} to accept larger files)"
                )
            files[name] = (sha, size)
        found = _Manifest(files, [], len(text))
        if len(files) + 1 > self.limits.max_files:
            raise self.refuse(
                f"it holds more than {self.limits.max_files} entries; raise "
                f"{self.limits.variable('files')} to accept more"
            )
        if found.total > self.limits.max_bytes:
            raise self.refuse(
                f"its files are over {human_size(self.limits.max_bytes)}; raise "
                f"{self.limits.variable('bytes')} to accept more"
            )
        named = sorted(n[5:-5] for n in files if n.startswith("runs/") and n.endswith(".json"))
        if (
            not all(isinstance(r, str) and RUN_ID.fullmatch(r) for r in runs)
            or sorted(runs) != named
        ):
            raise self.refuse("its manifest's list of runs does not match its run files")
        return _Manifest(files, [str(r) for r in runs], len(text))

    def stage(self, staging: Path) -> list[str]:
        """Both passes: the manifest checked, then every file written under ``staging``
        checked against it; returns the bundle's run ids."""
        try:
            raw: BinaryIO = self.path.open("rb")
        except OSError as error:
            raise UsageError(
                f"cannot read bundle {self.path}: {error.strerror or error}"
            ) from error
        with raw:
            manifest = self.manifest(raw)
            ensure_room(manifest.total, staging, f"bundle {self.path}")
            cap = manifest.total + manifest.size + _PER_MEMBER * (len(manifest.files) + 1) + _TAIL
            seen: set[str] = set()
            with self._members(raw, cap) as (tar, members, _):
                for member in members:
                    if not member.isreg() or member.name == MANIFEST:
                        continue  # the manifest: the first pass read it
                    declared = manifest.files.get(member.name)
                    if declared is None:
                        raise self.refuse(
                            f"{member.name!r} is in the bundle but not in its manifest"
                        )
                    if member.size != declared[1]:
                        raise self.refuse(
                            f"{member.name!r} is {member.size} bytes; its manifest says "
                            f"{declared[1]} (tampered?)"
                        )
                    self._write(tar, member, staging, declared[0])
                    seen.add(member.name)
        missing = sorted(set(manifest.files) - seen)
        if missing:
            raise self.refuse(f"{missing[0][:80]!r} is in its manifest but not in the bundle")
        return manifest.runs

    def _write(
        self, tar: tarfile.TarFile, member: tarfile.TarInfo, staging: Path, sha: str
    ) -> None:
        """Write ``member`` under ``staging`` (no more than its size), hashed as it goes."""
        path = staging.joinpath(*PurePosixPath(member.name).parts)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        data = tar.extractfile(member)
        assert data is not None, "a regular member has data"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with data, os.fdopen(os.open(path, flags, 0o600), "wb") as handle:
            while size < member.size and (chunk := data.read(min(_CHUNK, member.size - size))):
                size += len(chunk)
                digest.update(chunk)
                handle.write(chunk)
        if size != member.size:
            raise self.refuse(f"{member.name!r} is truncated")
        if digest.hexdigest() != sha:
            raise self.refuse(
                f"{member.name!r} does not match its hash in the manifest (tampered?)"
            )


def _load_json(path: Path, what: str, reader: _Reader) -> Any:
    if path.stat().st_size > _MAX_JSON:
        raise reader.refuse(f"{what} is over {_MAX_JSON} bytes")
    try:
        return json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise reader.refuse(f"{what} is not valid JSON ({error})") from error


def _folders(staging: Path, name: str) -> list[Path]:
    root = staging / name
    return sorted(root.iterdir()) if root.is_dir() else []


def _check_artifacts(staging: Path, reader: _Reader) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in _folders(staging, "artifacts"):
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
    for folder in _folders(staging, "images"):
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
        run_ids = reader.stage(staging)
        artifacts = _check_artifacts(staging, reader)
        sizes = {key: path_size(found) for key, found in artifacts.items()}
        now = time.time()
        runs = {}
        for run_id in run_ids:
            data = _load_json(staging / "runs" / f"{run_id}.json", f"run {run_id}", reader)
            why = check_run(data, run_id, sizes, now)
            if why is not None:
                raise reader.refuse(f"run {run_id}: {why}")
            runs[run_id] = data
        yield StagedBundle(runs, artifacts, _check_images(staging, reader), reader.refuse)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
