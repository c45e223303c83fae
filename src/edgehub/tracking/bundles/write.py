"""Writing a bundle: the manifest of every file's hash and size first (a reader checks each
file against it before writing a byte of it), then runs' rows, image locks and artifacts."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from edgehub.errors import UsageError
from edgehub.fsutil import sha256_file
from edgehub.tracking.bundles.format import FORMAT, MANIFEST, VERSION, BundleContents


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


def _zstd_compressor(target: Path) -> Any:
    try:
        import zstandard
    except ImportError:
        raise UsageError(
            f"cannot write {target}: zstd needs the zstandard module (pip install zstandard); "
            "or name the bundle runs.tar or runs.tar.gz"
        ) from None
    return zstandard.ZstdCompressor(level=10)


@contextmanager
def _archive(path: Path, mode: str, compressor: Any) -> Iterator[tarfile.TarFile]:
    """A tar file being written at ``path``: plain, gzip (``mode``) or through ``compressor``."""
    if compressor is None:
        with tarfile.open(path, mode) as tar:  # type: ignore[call-overload]
            yield tar
        return
    with (
        path.open("wb") as raw,
        compressor.stream_writer(raw) as stream,
        tarfile.open(fileobj=stream, mode="w|") as tar,
    ):
        yield tar


def write_bundle(contents: BundleContents, target: Path) -> int:
    """Write ``contents`` to ``target`` (gzip for ``.gz``/``.tgz``, zstd for ``.zst`` where
    the ``zstandard`` module is installed) through a temporary file beside it; returns the
    bundle's size in bytes."""
    name = target.name
    compressor = _zstd_compressor(target) if name.endswith(".zst") else None
    mode = "w:gz" if name.endswith((".gz", ".tgz")) else "w"
    now = time.time()
    files: dict[str, dict[str, Any]] = {}
    temporary = target.with_name(f".{name}.partial-{os.getpid()}")
    if not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: no folder {target.parent}; create it first")
    try:
        with _archive(temporary, mode, compressor) as tar:
            members: list[tuple[str, bytes | Path]] = []
            for run_id, rows in sorted(contents.runs.items()):
                members.append((f"runs/{run_id}.json", json.dumps(rows, indent=1).encode()))
            for image in contents.images.values():
                members.append((f"images/{image.folder}/Dockerfile", image.dockerfile))
                members.append((f"images/{image.folder}/requirements.lock", image.lock))
            for key, stored in sorted(contents.artifacts.items()):
                members.extend(_artifact_files(key, stored))
            for member, source in members:  # the manifest goes first: read before any file
                if isinstance(source, bytes):
                    files[member] = {"sha256": hashlib.sha256(source).hexdigest(),
                                     "size": len(source)}  # fmt: skip
                else:
                    files[member] = {"sha256": sha256_file(source), "size": source.stat().st_size}
            manifest = {"format": FORMAT, "version": VERSION, "created_at": now,
                        "runs": sorted(contents.runs), "files": files}  # fmt: skip
            _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1).encode(), now)
            for member, source in members:
                if isinstance(source, bytes):
                    _add_bytes(tar, member, source, now)
                    continue
                info = tar.gettarinfo(str(source), arcname=member)
                if info.size != files[member]["size"]:
                    raise UsageError(f"cannot write {target}: {source} changed while it was read")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o644
                with source.open("rb") as handle:
                    tar.addfile(info, handle)
        os.replace(temporary, target)
    except OSError as error:
        raise UsageError(f"cannot write {target}: {error.strerror or error}") from error
    finally:
        temporary.unlink(missing_ok=True)
    return target.stat().st_size
