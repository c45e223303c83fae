"""Files in and out of a container: tar streams through ``docker exec``, or Docker's archive API
for images without ``tar``.

An exec of ``tar`` costs a few tens of milliseconds and extracts as the container's own user;
the archive API (several times slower a call) is the fallback when the image has no ``tar``
(exit 126/127). Both are plain API calls, so they work on a remote daemon too. Downloads are
spooled to disk as they arrive (`~edgehub.runners.spool.ArchiveSpool`: capped, zeros kept as
holes), extracted with `safe_extract` in a scratch directory next to the destination and moved
into place.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

from edgehub.errors import RunnerError
from edgehub.runners.archive import SPARSE_FLAG, pack
from edgehub.runners.docker.client import DockerAPIError, DockerClient, DockerNotFound
from edgehub.runners.docker.container import Container, image_owner
from edgehub.runners.docker.exec import exec_quiet
from edgehub.runners.spool import ArchiveSpool

NO_TAR = (126, 127)  # exit codes of a shell that cannot find or run the command
_PUT_SCRIPT = 'mkdir -p -- "$1" && exec tar -x -f - -C "$1"'
# a sparse archive where the image's tar can make one (GNU tar)
_GET_SCRIPT = SPARSE_FLAG + 'exec tar -c $S -f - -C "$1" -- "$2"'


class ContainerFiles:
    """``put`` and ``get`` for one container; ``ensure`` starts it on first use."""

    def __init__(self, container: Container, ensure: Callable[[], str]) -> None:
        self._container = container
        self._ensure = ensure  # starts the container if need be; its id
        self._owner: tuple[int, int] | None = None

    def remote(self, path: str | PurePath) -> str:
        """``path`` in the container; relative paths are under the work directory."""
        remote = PurePosixPath(str(path))
        workdir = PurePosixPath(self._container.settings.workdir)
        return str(remote if remote.is_absolute() else workdir / remote)

    def _client(self) -> DockerClient:
        client = self._container.client
        assert client is not None, "the container is started before its files move"
        return client

    def _user_ids(self, container_id: str) -> tuple[int, int]:
        if self._owner is None:
            self._owner = image_owner(self._container.image_attrs)
        if self._owner is None:
            code, out, _ = exec_quiet(self._client(), container_id, ["sh", "-c", "id -u; id -g"])
            numbers = out.split()
            if code != 0 or len(numbers) != 2:
                raise RunnerError(
                    f"cannot tell the user of container {self._container.settings.image}; "
                    "does it have id?"
                )
            self._owner = (int(numbers[0]), int(numbers[1]))
        return self._owner

    def put(self, local: Path, remote: str | PurePath) -> None:
        """Copy a file or directory into the container at ``remote`` (parents are created)."""
        local = Path(local)
        if not local.exists():
            raise RunnerError(f"cannot copy {local}: no such file or directory")
        container_id = self._ensure()
        target = PurePosixPath(self.remote(remote))
        if target.name in ("", ".", ".."):
            raise RunnerError(f"cannot copy to {remote!s}: name a file or directory to create")
        data = pack(local, arcname=target.name)
        argv = ["sh", "-c", _PUT_SCRIPT, "edgehub-put", str(target.parent)]
        code, _, err = exec_quiet(self._client(), container_id, argv, stdin=data)
        if code == 0:
            return
        if code not in NO_TAR:
            raise RunnerError(f"cannot copy {local} to {target}: {_tar_error(err)}")
        uid, gid = self._user_ids(container_id)  # no tar in the image: the archive API
        data = _owned_by(data, uid, gid)
        for attempt in (1, 2):
            try:
                self._client().put_archive(container_id, str(target.parent), data)
                return
            except DockerNotFound:
                if attempt == 2:
                    raise RunnerError(
                        f"cannot copy {local} to {target}: no such directory"
                    ) from None
                mkdir = ["mkdir", "-p", "--", str(target.parent)]
                code, _, err = exec_quiet(self._client(), container_id, mkdir)
                if code != 0:
                    raise RunnerError(
                        f"cannot create {target.parent} in the container: {err.strip()}"
                    ) from None
            except DockerAPIError as error:
                raise RunnerError(
                    f"cannot copy {local} to {target}: {error.explanation}"
                ) from error

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Copy ``remote`` (file or directory) out of the container to exactly ``local``."""
        local = Path(local)
        container_id = self._ensure()
        source = self.remote(remote)
        parent, name = str(PurePosixPath(source).parent), PurePosixPath(source).name
        local.parent.mkdir(parents=True, exist_ok=True)
        with (
            tempfile.TemporaryDirectory(prefix=".edgehub-get-", dir=local.parent) as scratch,
            ArchiveSpool(Path(scratch)) as spool,
        ):
            stat: dict[str, Any] = {"name": name}
            argv = ["sh", "-c", _GET_SCRIPT, "edgehub-get", parent, name]
            try:
                code, _, err = exec_quiet(self._client(), container_id, argv, on_stdout=spool.write)
                if code in NO_TAR and not spool.received:  # no tar in the image: the archive API
                    chunks, stat = self._client().get_archive(container_id, source)
                    for chunk in chunks:
                        spool.write(chunk)
                elif code != 0:
                    raise RunnerError(f"cannot copy {source} from the container: {_tar_error(err)}")
            except DockerNotFound:
                raise RunnerError(
                    f"cannot copy {source} from the container: no such file or directory"
                ) from None
            except DockerAPIError as error:
                raise RunnerError(f"cannot copy {source}: {error.explanation}") from error
            extracted = Path(scratch) / "out"
            names = spool.extract(extracted)
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
