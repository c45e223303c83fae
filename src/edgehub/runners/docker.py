"""`DockerCommandRunner`: commands in one long-lived container of a pinned image.

The container runs ``sleep infinity`` under Docker's init; every `run` is an ``exec`` whose
stdout and stderr stream separately, line by line, to the current event sink. Files move with
the archive API only (``put_archive``/``get_archive``), so a remote daemon
(``DOCKER_HOST=ssh://...``) works as well as the local one. Containers carry labels naming the
process that owns them: they are removed on exit, at interpreter exit, and by `reap_orphans`
once their owner is gone.
"""

from __future__ import annotations

import atexit
import codecs
import io
import os
import re
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePath, PurePosixPath
from types import TracebackType
from typing import Any, cast

from edgehub.core.device.runner import CommandResult
from edgehub.core.events import current_sink
from edgehub.errors import (
    CommandCancelled,
    CommandError,
    CommandTimeout,
    ImageNotBuiltError,
    RunnerError,
)
from edgehub.runners.archive import pack, safe_extract
from edgehub.runners.local import describe_failure
from edgehub.runners.streaming import LineCollector

__all__ = ["DockerCommandRunner", "reap_orphans"]

MANAGED = "org.edgehub.managed"
OWNER_PID = "org.edgehub.owner-pid"
OWNER_HOST = "org.edgehub.owner-host"
OWNER_STARTED = "org.edgehub.owner-started"
UID_LABEL = "org.edgehub.uid"  # the image's user, so uploads need not ask the container
GID_LABEL = "org.edgehub.gid"
WARM = "org.edgehub.warm"
WARM_KEY = "org.edgehub.warm-key"
_ALIVE = "/tmp/.edgehub-alive"
# A warm container's main process: exit (and so, with auto-remove, vanish) once no command has
# started or ended for IDLE seconds.
_IDLE_LOOP = (
    f"touch {_ALIVE}; while [ $(( $(date +%s) - $(stat -c %Y {_ALIVE}) )) -lt $0 ]; "
    "do sleep 1; done"
)
_TOUCH_WRAPPER = f'touch {_ALIVE} 2>/dev/null; "$@"; rc=$?; touch {_ALIVE} 2>/dev/null; exit $rc'
_MARKER = "EDGEHUB_EXEC_ID"

# Kills every process whose environment carries the exec's marker, with its process group. A
# second exec runs it as the container's user (root there may not read other users' environ),
# so it works on a remote daemon too.
_KILL_SCRIPT = r"""
for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" = "$$" ] && continue
    if grep -qzxF "$1" "$dir/environ" 2>/dev/null; then
        kill -KILL -- "-$pid" 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
    fi
done
exit 0
"""

_OCI_FAILURE = "OCI runtime exec failed:"


def _start_ticks(pid: int) -> str | None:
    """When a process started (clock ticks since boot), to tell a reused pid from its owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def _owner_alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if started:
        current = _start_ticks(pid)
        if current is not None and current != started:
            return False
    return True


def reap_orphans(client: Any | None = None) -> list[str]:
    """Remove managed containers of this host whose owning process is dead; returns their ids."""
    import docker.errors

    from edgehub.images import docker_client

    own = client is None
    client = docker_client() if client is None else client
    removed: list[str] = []
    try:
        filters = {"label": [f"{MANAGED}=1", f"{OWNER_HOST}={socket.gethostname()}"]}
        for summary in client.api.containers(all=True, filters=filters):
            labels = summary.get("Labels") or {}
            try:
                pid = int(labels.get(OWNER_PID, ""))
            except ValueError:
                continue
            if _owner_alive(pid, labels.get(OWNER_STARTED)):
                continue
            try:
                client.api.remove_container(summary["Id"], force=True)
            except docker.errors.NotFound:
                pass
            removed.append(str(summary["Id"]))
    finally:
        if own:
            client.close()
    return removed


_OPEN: set[DockerCommandRunner] = set()
_OPEN_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    with _OPEN_LOCK:
        runners = list(_OPEN)
    for runner in runners:
        try:
            runner.close()
        except Exception:  # best effort at interpreter exit
            pass


class _Exec:
    """One command in flight: its exec id, marker, and why it was stopped (if it was)."""

    def __init__(self, exec_id: str, marker: str) -> None:
        self.exec_id = exec_id
        self.marker = marker
        self.stopped: str | None = None  # "timeout" or "cancel"


class DockerCommandRunner:
    """Runs argv lists in a container of ``image``; ``put``/``get`` use the archive API.

    Nothing touches Docker until ``__enter__`` or the first use; the container is removed by
    `close` (and by ``__exit__``, on errors and Ctrl-C too).
    """

    device_name: str | None = None

    def __init__(
        self,
        image: str,
        *,
        cpus: float | None = None,
        memory: str | None = None,
        network: bool = False,
        user: str | None = None,
        workdir: str = "/work",
        labels: Mapping[str, str] | None = None,
        keep_warm: float | None = None,
    ) -> None:
        self._image = image
        self._keep_warm = keep_warm if keep_warm and keep_warm > 0 else None
        self._cpus = cpus
        self._memory = memory
        self._network = network
        self._user = user
        self._workdir = workdir
        self._labels = dict(labels or {})
        self._client: Any = None
        self._container_id: str | None = None
        self._image_attrs: dict[str, Any] = {}
        self._owner: tuple[int, int] | None = None
        self._pending_name: str | None = None
        self._lock = threading.RLock()
        self._execs: set[_Exec] = set()
        self._execs_lock = threading.Lock()

    # -- identity -------------------------------------------------------------------------

    @property
    def image(self) -> str:
        return self._image

    @property
    def container_id(self) -> str | None:
        return self._container_id

    @property
    def image_id(self) -> str | None:
        return str(self._image_attrs["Id"]) if self._image_attrs else None

    @property
    def image_digest(self) -> str | None:
        """The image's first repo digest, or its id for a locally built image."""
        if not self._image_attrs:
            return None
        digests = self._image_attrs.get("RepoDigests") or []
        return str(digests[0]) if digests else str(self._image_attrs["Id"])

    def __repr__(self) -> str:
        state = self._container_id[:12] if self._container_id else "not started"
        return f"DockerCommandRunner({self._image!r}, {state})"

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> DockerCommandRunner:
        self._ensure_started()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _ensure_started(self) -> str:
        with self._lock:
            if self._container_id is not None:
                return self._container_id
            from edgehub.images import docker_client

            self._client = self._client or docker_client()
            try:
                return self._start(self._client)
            except BaseException:
                self.close()  # removes a half-made container, closes the client
                raise

    def _start(self, client: Any) -> str:
        import docker.errors

        try:
            reap_orphans(client)
        except docker.errors.APIError:
            pass  # tidying up after others must not stop this runner
        try:
            self._image_attrs = client.api.inspect_image(self._image)
        except docker.errors.ImageNotFound:
            raise ImageNotBuiltError(_missing_image_message(self._image)) from None
        if self._keep_warm is not None:
            return self._start_warm(client)
        labels = {
            **self._labels,
            MANAGED: "1",
            OWNER_PID: str(os.getpid()),
            OWNER_HOST: socket.gethostname(),
        }
        started = _start_ticks(os.getpid())
        if started:
            labels[OWNER_STARTED] = started
        options: dict[str, Any] = {"init": True, "labels": labels, "working_dir": self._workdir}
        if not self._network:
            options["network_mode"] = "none"
        if self._cpus is not None:
            options["nano_cpus"] = int(self._cpus * 1e9)
        if self._memory is not None:
            options["mem_limit"] = self._memory
        if self._user is not None:
            options["user"] = self._user
        # Known by name before it exists, so close() and atexit can remove a container whose
        # creation was interrupted.
        self._pending_name = f"edgehub-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with _OPEN_LOCK:
            _OPEN.add(self)
        try:
            container = client.containers.create(
                self._image, ["sleep", "infinity"], name=self._pending_name, **options
            )
            self._container_id = str(container.id)
            container.start()
        except docker.errors.APIError as error:
            raise RunnerError(
                f"cannot start a container of {self._image}: {_explain(error)}; "
                "check the runner's cpus/memory/user settings"
            ) from error
        self._pending_name = None
        return self._container_id

    def _warm_key(self) -> str:
        import hashlib

        settings = [
            self._image_attrs.get("Id"),
            self._cpus,
            self._memory,
            self._network,
            self._user,
            self._workdir,
            sorted(self._labels.items()),
            os.getuid(),
        ]
        return hashlib.sha256(repr(settings).encode()).hexdigest()[:16]

    def _start_warm(self, client: Any) -> str:
        """Reuse the running warm container with these settings, or start one that removes
        itself after ``keep_warm`` idle seconds."""
        import docker.errors

        key = self._warm_key()
        name = f"edgehub-warm-{key}"
        for _ in range(3):
            try:
                info = client.api.inspect_container(name)
                if info["State"]["Running"]:
                    self._container_id = str(info["Id"])
                    _exec_quiet(client, self._container_id, ["touch", _ALIVE])
                    return self._container_id
                client.api.remove_container(name, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                time.sleep(0.2)  # being removed by its idle exit, or by a racing process
                continue
            options: dict[str, Any] = {
                "init": True,
                "auto_remove": True,
                "working_dir": self._workdir,
                "labels": {**self._labels, MANAGED: "1", WARM: "1", WARM_KEY: key},
            }
            if not self._network:
                options["network_mode"] = "none"
            if self._cpus is not None:
                options["nano_cpus"] = int(self._cpus * 1e9)
            if self._memory is not None:
                options["mem_limit"] = self._memory
            if self._user is not None:
                options["user"] = self._user
            try:
                container = client.containers.create(
                    self._image,
                    ["sh", "-c", _IDLE_LOOP, str(int(self._keep_warm or 0))],
                    name=name,
                    **options,
                )
                container.start()
                self._container_id = str(container.id)
                return self._container_id
            except docker.errors.APIError as error:
                if getattr(error, "status_code", None) == 409:
                    continue  # another process created it first: adopt it
                raise RunnerError(
                    f"cannot start a warm container of {self._image}: {_explain(error)}"
                ) from error
        raise RunnerError(f"cannot start or reuse the warm container {name}; try again")

    def close(self) -> None:
        """Stop commands in flight and remove the container (idempotent); a warm container is
        left running for the next process."""
        self.cancel()
        if self._keep_warm is not None:
            with self._lock:
                self._container_id = None
                client, self._client = self._client, None
                self._owner = None
                if client is not None:
                    client.close()
            return
        with self._lock:
            container_id = self._container_id or self._pending_name
            self._container_id = self._pending_name = None
            client, self._client = self._client, None
            self._owner = None
            try:
                if container_id is not None and client is not None:
                    import docker.errors

                    try:
                        client.api.remove_container(container_id, force=True)
                    except docker.errors.NotFound:
                        pass
                    except docker.errors.APIError as error:
                        raise RunnerError(
                            f"cannot remove container {container_id[:12]}: {_explain(error)}; "
                            f"remove it with: docker rm -f {container_id[:12]}"
                        ) from error
            finally:
                with _OPEN_LOCK:
                    _OPEN.discard(self)
                if client is not None:
                    client.close()

    # -- commands ---------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        cwd: str | PurePath | None = None,
        *,
        hide: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult:
        words = [str(word) for word in argv]
        if not words:
            raise ValueError("argv must name a command")
        sink = None if hide else current_sink()
        container_id = self._ensure_started()
        api = self._client.api
        marker = f"{_MARKER}={uuid.uuid4().hex}"
        environment = [f"{key}={value}" for key, value in (env or {}).items()] + [marker]
        started = time.monotonic()
        try:
            created = api.exec_create(
                container_id,
                ["sh", "-c", _TOUCH_WRAPPER, "edgehub", *words] if self._keep_warm else words,
                stdout=True,
                stderr=True,
                environment=environment,
                workdir=None if cwd is None else self._remote(cwd),
            )
            handle = _Exec(str(created["Id"]), marker)
            stream = api.exec_start(handle.exec_id, stream=True, demux=True)
        except Exception as error:
            raise RunnerError(
                f"cannot run {words[0]!r} in container {container_id[:12]}: {_explain(error)}; "
                "check that the container is still running (docker ps)"
            ) from error
        with self._execs_lock:
            self._execs.add(handle)
        out, err = LineCollector("stdout", sink), LineCollector("stderr", sink)
        done = threading.Event()
        reader = threading.Thread(
            target=_read_demuxed, args=(stream, out, err, done), daemon=True, name="edgehub-exec"
        )
        reader.start()
        try:
            if not done.wait(timeout):
                handle.stopped = handle.stopped or "timeout"
                self._kill(handle)
            _wait_stream(done, stream, handle)
        except BaseException:
            handle.stopped = handle.stopped or "cancel"
            self._kill(handle)
            stream.close()
            raise
        finally:
            reader.join(timeout=5)
            with self._execs_lock:
                self._execs.discard(handle)
        returncode = _exit_code(self._client, handle.exec_id)
        result = CommandResult(
            argv=tuple(words),
            returncode=returncode,
            stdout=out.text,
            stderr=err.text,
            duration_s=time.monotonic() - started,
        )
        if handle.stopped == "timeout":
            raise CommandTimeout(
                f"command {words[0]!r} ran longer than {timeout} s and was stopped"
            )
        if handle.stopped == "cancel":
            raise CommandCancelled(f"command {words[0]!r} was cancelled")
        if returncode == 126 and result.stdout.startswith(_OCI_FAILURE):
            raise RunnerError(self._start_failure(words, cwd, result.stdout))
        if check and returncode != 0:
            raise CommandError(
                describe_failure(words, result),
                returncode=returncode,
                stdout=result.stdout,
                stderr=result.stderr,
            )
        return result

    def cancel(self) -> None:
        """Stop every command this runner has in flight (callable from any thread)."""
        with self._execs_lock:
            handles = list(self._execs)
        for handle in handles:
            handle.stopped = handle.stopped or "cancel"
            self._kill(handle)

    def _start_failure(self, words: list[str], cwd: str | PurePath | None, output: str) -> str:
        """A one-line message for an exec the container runtime could not start."""
        if "executable file not found" in output:
            return (
                f"command {words[0]!r} not found in image {self._image}; "
                "install it in the image or fix the path"
            )
        if "chdir" in output and cwd is not None:
            return (
                f"working directory {self._remote(cwd)} does not exist in the container; "
                "create it first (put creates parents) or pick another cwd"
            )
        detail = " ".join(output.split()).removeprefix(_OCI_FAILURE).strip()
        return f"cannot start {words[0]!r} in image {self._image}: {detail}"

    def _kill(self, handle: _Exec) -> None:
        """Kill the exec's processes (found by their marker) until the exec has ended."""
        client, container_id = self._client, self._container_id
        if client is None or container_id is None:
            return
        argv = ["sh", "-c", _KILL_SCRIPT, "edgehub-kill", handle.marker]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                _exec_quiet(client, container_id, argv)
                if not client.api.exec_inspect(handle.exec_id).get("Running"):
                    return
            except Exception:  # the container may be going away
                return
            time.sleep(0.05)

    def _exec_quiet(self, argv: Sequence[str]) -> tuple[int, str, str]:
        return _exec_quiet(self._client, self._ensure_started(), argv)

    # -- files ------------------------------------------------------------------------------

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
        uid, gid = self._container_owner()
        data = _owned_by(pack(local, arcname=target.name), uid, gid)
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
                raise RunnerError(f"cannot copy {local} to {target}: {_explain(error)}") from error

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Copy ``remote`` (file or directory) out of the container to exactly ``local``."""
        local = Path(local)
        container_id = self._ensure_started()
        source = self._remote(remote)
        import docker.errors

        local.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".edgehub-get-", dir=local.parent) as scratch:
            archive = Path(scratch) / "archive.tar"
            try:
                chunks, stat = self._client.api.get_archive(container_id, source)
                with archive.open("wb") as stream:
                    for chunk in chunks:
                        stream.write(chunk)
            except docker.errors.NotFound:
                raise RunnerError(
                    f"cannot copy {source} from the container: no such file or directory"
                ) from None
            except docker.errors.APIError as error:
                raise RunnerError(f"cannot copy {source}: {_explain(error)}") from error
            extracted = Path(scratch) / "out"
            with archive.open("rb") as stream:
                names = safe_extract(cast(io.IOBase, stream), extracted)
            top = str(stat.get("name") or (names[0].split("/")[0] if names else ""))
            item = extracted / top
            if not top or not (item.exists() or item.is_symlink()):
                raise RunnerError(f"cannot copy {source}: the container sent an empty archive")
            _move_into_place(item, local)


def _exit_code(client: Any, exec_id: str) -> int:
    """An exec's exit code; the daemon may record it a moment after the stream ends."""
    for _ in range(100):
        info = client.api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        time.sleep(0.02)
    return -1


def _exec_quiet(
    client: Any, container_id: str, argv: Sequence[str], user: str = ""
) -> tuple[int, str, str]:
    """Run a short helper command without streaming; returns (code, stdout, stderr)."""
    created = client.api.exec_create(container_id, list(argv), user=user)
    output = client.api.exec_start(created["Id"], demux=True)
    stdout, stderr = output if isinstance(output, tuple) else (output, None)
    return (
        _exit_code(client, str(created["Id"])),
        (stdout or b"").decode("utf-8", "replace"),
        (stderr or b"").decode("utf-8", "replace"),
    )


def _read_demuxed(
    stream: Iterable[tuple[bytes | None, bytes | None]],
    out: LineCollector,
    err: LineCollector,
    done: threading.Event,
) -> None:
    decoders = {
        "out": codecs.getincrementaldecoder("utf-8")("replace"),
        "err": codecs.getincrementaldecoder("utf-8")("replace"),
    }
    try:
        for stdout, stderr in stream:
            if stdout:
                out.feed_text(decoders["out"].decode(stdout))
            if stderr:
                err.feed_text(decoders["err"].decode(stderr))
    except Exception:  # a closed stream ends the command's output
        pass
    finally:
        out.feed_text(decoders["out"].decode(b"", final=True))
        err.feed_text(decoders["err"].decode(b"", final=True))
        out.close()
        err.close()
        done.set()


def _wait_stream(done: threading.Event, stream: Any, handle: _Exec) -> None:
    """Wait for the output to end; a stopped command's stream is closed if it lingers."""
    while not done.wait(0.5):
        if handle.stopped is not None:
            if done.wait(5):
                return
            stream.close()
            done.wait(5)
            return


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


def _explain(error: BaseException) -> str:
    text = str(getattr(error, "explanation", None) or error)
    return " ".join(text.split())


def _missing_image_message(image: str) -> str:
    match = re.fullmatch(r"edgehub-([a-z0-9]+):[0-9a-f]+", image)
    if match:
        return f"image {image!r} is not built; run: hub images build {match.group(1)}"
    return f"image {image!r} is not present in the Docker daemon; build or load it first"
