"""Files in and out of a runner's container: tar streams through ``docker exec``, or Docker's
archive API for images without ``tar``.

Both work on a remote daemon (``DOCKER_HOST=ssh://...``) as well as the local one. Uploads are
owned by the container's user; downloads are extracted safely and moved into place.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

from edgehub.errors import RunnerError
from edgehub.runners.archive import pack, safe_extract
from edgehub.runners.docker_exec import exec_quiet, explain
from edgehub.runners.docker_tar import NO_TAR, exec_read, exec_write

__all__ = ["GID_LABEL", "UID_LABEL", "DockerFiles"]

UID_LABEL = "org.edgehub.uid"  # the image's user, so uploads need not ask the container
GID_LABEL = "org.edgehub.gid"


class DockerFiles:
    """``put`` and ``get`` of `DockerCommandRunner`, which provides the container."""

    _client: Any
    _image: str
    _image_attrs: dict[str, Any]
    _owner: tuple[int, int] | None
    _workdir: str

    if TYPE_CHECKING:

        def _ensure_started(self) -> str: ...

    def _exec_quiet(self, argv: Sequence[str]) -> tuple[int, str, str]:
        return exec_quiet(self._client, self._ensure_started(), argv)

    def _remote(self, path: str | PurePath) -> str:
        remote = PurePosixPath(str(path))
        return str(remote if remote.is_absolute() else PurePosixPath(self._workdir) / remote)

    def _container_owner(self) -> tuple[int, int]:
        labels = (self._image_attrs.get("Config") or {}).get("Labels") or {}
        if self._owner is None and labels.get(UID_LABEL, "").isdigit():
            self._owner = (int(labels[UID_LABEL]), int(labels.get(GID_LABEL, labels[UID_LABEL])))
        if self._owner is None:
            code, out, _ = self._exec_quiet(["sh", "-c", "id -u; id -g"])
            numbers = out.split()
            if code != 0 or len(numbers) != 2:
                raise RunnerError(
                    f"cannot tell the user of container {self._image}; does it have id?"
                )
            self._owner = (int(numbers[0]), int(numbers[1]))
        return self._owner

    def put(self, local: Path, remote: str | PurePath) -> None:
        """Copy a file or directory into the container at ``remote`` (parents are created)."""
        local = Path(local)
        if not local.exists():
            raise RunnerError(f"cannot copy {local}: no such file or directory")
        container_id = self._ensure_started()
        target = PurePosixPath(self._remote(remote))
        if target.name in ("", ".", ".."):
            raise RunnerError(f"cannot copy to {remote!s}: name a file or directory to create")
        data = pack(local, arcname=target.name)
        code, err = exec_write(self._client, container_id, str(target.parent), data)
        if code == 0:
            return
        if code not in NO_TAR:
            raise RunnerError(f"cannot copy {local} to {target}: {_tar_error(err)}")
        uid, gid = self._container_owner()  # no tar in the image: the archive API
        data = _owned_by(data, uid, gid)
        import docker.errors

        for attempt in (1, 2):
            try:
                self._client.api.put_archive(container_id, str(target.parent), data)
                return
            except docker.errors.NotFound:
                if attempt == 2:
                    raise RunnerError(
                        f"cannot copy {local} to {target}: no such directory"
                    ) from None
                code, _, err = self._exec_quiet(["mkdir", "-p", "--", str(target.parent)])
                if code != 0:
                    raise RunnerError(
                        f"cannot create {target.parent} in the container: {err.strip()}"
                    ) from None
            except docker.errors.APIError as error:
                raise RunnerError(f"cannot copy {local} to {target}: {explain(error)}") from error

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Copy ``remote`` (file or directory) out of the container to exactly ``local``."""
        local = Path(local)
        container_id = self._ensure_started()
        source = self._remote(remote)
        import docker.errors

        local.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".edgehub-get-", dir=local.parent) as scratch:
            archive = Path(scratch) / "archive.tar"
            parent, name = str(PurePosixPath(source).parent), PurePosixPath(source).name
            stat: dict[str, Any] = {"name": name}
            try:
                with archive.open("wb") as stream:
                    code, err = exec_read(self._client, container_id, parent, [name], stream)
                if code in NO_TAR:  # no tar in the image: the archive API
                    chunks, stat = self._client.api.get_archive(container_id, source)
                    with archive.open("wb") as stream:
                        for chunk in chunks:
                            stream.write(chunk)
                elif code != 0:
                    raise RunnerError(f"cannot copy {source} from the container: {_tar_error(err)}")
            except docker.errors.NotFound:
                raise RunnerError(
                    f"cannot copy {source} from the container: no such file or directory"
                ) from None
            except docker.errors.APIError as error:
                raise RunnerError(f"cannot copy {source}: {explain(error)}") from error
            extracted = Path(scratch) / "out"
            with archive.open("rb") as stream:
                names = safe_extract(cast(io.IOBase, stream), extracted)
            top = str(stat.get("name") or (names[0].split("/")[0] if names else ""))
            item = extracted / top
            if not top or not (item.exists() or item.is_symlink()):
                raise RunnerError(f"cannot copy {source}: the container sent an empty archive")
            _move_into_place(item, local)


def _tar_error(stderr: str) -> str:
    """The useful line of tar's complaint (its first; the last is a generic summary)."""
    if "No such file or directory" in stderr:
        return "no such file or directory"
    lines = stderr.strip().splitlines()
    return lines[0] if lines else "tar failed"


def _owned_by(data: bytes, uid: int, gid: int) -> bytes:
    """The same tar archive with every entry owned by ``uid:gid`` (the container's user)."""
    buffer = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(data), mode="r:") as source,
        tarfile.open(fileobj=buffer, mode="w") as target,
    ):
        for member in source.getmembers():
            member.uid, member.gid, member.uname, member.gname = uid, gid, "", ""
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
    return buffer.getvalue()


def _move_into_place(item: Path, local: Path) -> None:
    """Rename an extracted file or directory to ``local``; directories merge into one there."""
    if item.is_dir() and not item.is_symlink() and local.is_dir() and not local.is_symlink():
        shutil.copytree(item, local, dirs_exist_ok=True, symlinks=True)
        return
    if local.is_dir() and not local.is_symlink():
        shutil.rmtree(local)
    os.replace(item, local)
