"""Files that travel with a job over the server's socket. Standard library.

A client that cannot reach the server's file system (the host, for a warm container) sends the
job's working directory as an uncompressed tar after its request line and asks for one folder
back (:mod:`.wire`). The job's process unpacks the tar into ``cwd``'s parent before it runs and,
once the command has ended, writes ``\\0EDGEHUB-FILES <size>\\n`` and the folder's tar, then
removes the job's folder. Only plain files, directories, hard links to members already unpacked
and, where the request names the client's store of shared files (``stage.links``), symbolic
links to absolute paths inside it are accepted, each under a relative name without ``..`` (not
under such a link); anything else refuses the whole archive before a byte is written.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from typing import Any

from .wire import FILES, marker, write_all


class StageError(ValueError):
    """The archive sent with a job is not one this server unpacks."""


def _safe_name(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and ".." not in parts and "\0" not in name


def check_members(tar: tarfile.TarFile, links: str | None = None) -> None:
    names = set()
    symlinks: set[str] = set()
    for member in tar.getmembers():
        name = member.name.rstrip("/")
        if not _safe_name(name):
            raise StageError(f"unsafe name in the job's archive: {member.name!r}")
        if any(name.startswith(link + "/") for link in symlinks):
            raise StageError(f"a member under a link in the job's archive: {member.name!r}")
        if member.issym() and _in_store(member.linkname, links):
            symlinks.add(name)  # not among `names`: no hard link may name it
            continue
        if member.islnk():
            if member.linkname.rstrip("/") not in names:
                raise StageError(f"hard link to an unknown member: {member.name!r}")
        elif not (member.isfile() or member.isdir()):
            raise StageError(f"not a file or directory in the job's archive: {member.name!r}")
        names.add(name)


def _in_store(target: str, links: str | None) -> bool:
    """Whether ``target`` is an absolute path under the folder ``links`` (no ``..``)."""
    if not links or not target.startswith("/") or "\0" in target:
        return False
    parts = target.split("/")
    return ".." not in parts and "." not in parts and target.startswith(links.rstrip("/") + "/")


def unpack(data: bytes, parent: str, links: str | None = None) -> None:
    """Unpack the job's archive into ``parent`` (made if missing); raises `StageError`.
    ``links``: the client's store of shared files, which symbolic links may point into."""
    os.makedirs(parent, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            check_members(tar, links)
            members = [member for member in tar.getmembers() if not member.issym()]
            for member in members:
                member.mode = (member.mode & 0o755) | (0o700 if member.isdir() else 0o600)
            if hasattr(tarfile, "data_filter"):  # a second guard where this Python has it
                tar.extractall(parent, members=members, numeric_owner=True, filter="data")
            else:
                tar.extractall(parent, members=members, numeric_owner=True)
            for member in tar.getmembers():
                if member.issym():  # checked above; the data filter refuses absolute links
                    path = os.path.join(parent, member.name.rstrip("/"))
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    if os.path.lexists(path):
                        os.unlink(path)
                    os.symlink(member.linkname, path)
    except tarfile.TarError as exc:
        raise StageError(f"cannot read the job's archive: {exc}") from exc


def pack(cwd: str, folder: str) -> bytes:
    """The tar of ``cwd/folder``, rooted at ``folder`` (empty when it does not exist)."""
    path = os.path.join(cwd, folder)
    if not os.path.exists(path):
        return b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(path, arcname=folder)
    return buffer.getvalue()


def send_back(stage: dict[str, Any], cwd: str) -> None:
    """Write the FILES line and the tar of the folder the client asked for to stdout (fd 1)."""
    data = pack(cwd, str(stage.get("fetch") or "out"))
    write_all(1, marker(FILES, len(data)) + data)


def remove_job_folder(cwd: str) -> None:
    """Remove the job's folder once its files have gone back (nothing else reads it): a
    container that serves jobs for hours keeps no job's files. The run's folder above it
    stays (another job of the run may be unpacking into it). Links are removed, never
    followed."""
    shutil.rmtree(cwd, ignore_errors=True)
