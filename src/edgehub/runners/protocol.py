"""The protocol every transport implements, its optional capabilities, a command's result."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from edgehub.runners.ssh.config import SSHConfig


@dataclass(frozen=True)
class CommandResult:
    """What a finished command left behind."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@runtime_checkable
class CommandRunner(Protocol):
    """Runs commands and moves files on one machine (the host, a container, a device).

    ``argv`` is always a list of words, never a shell string. ``run`` streams output lines to the
    current event sink unless ``hide`` is true, and raises `~edgehub.errors.CommandError` on a
    non-zero exit unless ``check`` is false. ``put``/``get`` move files and directories.
    ``cancel`` may be called from another thread and stops the command in flight.
    """

    def run(
        self,
        argv: Sequence[str],
        cwd: str | PurePath | None = None,
        *,
        hide: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult: ...

    def put(self, local: Path, remote: str | PurePath) -> None: ...

    def get(self, remote: str | PurePath, local: Path) -> None: ...

    def cancel(self) -> None: ...

    def __enter__(self) -> CommandRunner: ...

    def __exit__(self, *exc_info: object) -> None: ...


@dataclass(frozen=True)
class Exchange:
    """One round trip: directory ``stage`` uploaded as ``remote``, ``argv`` run in it, its
    ``fetch`` subdirectory downloaded to ``local``. ``links``: the device folder the staged
    symbolic links point into (an agent relay's content store)."""

    stage: Path
    remote: str | PurePath
    argv: Sequence[str]
    fetch: str
    local: Path
    timeout: float | None = None
    hide: bool = False
    links: str | None = None


@runtime_checkable
class SupportsExchange(Protocol):
    """An optional capability: upload, run and download in one round trip.

    Runners that offer it (the Docker and SSH runners) let callers test ``isinstance(runner,
    SupportsExchange)``; the others are used with ``put``, ``run`` and ``get``.
    """

    def exchange(self, job: Exchange) -> CommandResult:
        """Run ``job`` in one round trip; the exit code is not checked."""
        ...


@runtime_checkable
class SupportsWorkFolder(Protocol):
    """An optional capability of a runner that holds a connection to its device (the SSH
    runner): a private folder on the device that lives exactly as long as the connection (it
    is removed, with what runs from it, however the connection ends), and closing."""

    @property
    def is_active(self) -> bool:
        """Whether the connection is open."""
        ...

    def work_folder(self) -> PurePosixPath:
        """The connection's work folder on the device (connecting first if need be)."""
        ...

    def close(self) -> None:
        """Stop what runs and close the connection (its work folder goes with it)."""
        ...


@runtime_checkable
class SupportsAgentChannel(Protocol):
    """An optional capability: a job handed to a resident agent server in one round trip, with
    no command started (a warm container's mounted socket, an SSH device's relay)."""

    def agent_exchange(self, job: Exchange, socket: str) -> CommandResult | None:
        """`SupportsExchange.exchange` run by the agent server on ``socket``; None when no
        server took the job (nothing ran): use ``exchange`` then."""
        ...


@runtime_checkable
class SupportsContentUpload(Protocol):
    """An optional capability: an upload to a path named by the file's content, where a file
    of the same size already there is taken as it (so a model is sent once)."""

    def put_content(self, local: Path, remote: str | PurePath) -> None:
        """Upload ``local`` to ``remote``, whose name holds the content's hash."""
        ...


# what `SupportsSharedInput.share_input` did: sent; found there (and checked); sent again in
# place of a copy that was changed on the device, or that the device could not hash
SENT, FOUND, RESENT, UNCHECKED = "sent", "found", "resent", "unchecked"


@runtime_checkable
class SupportsSharedInput(Protocol):
    """An ability: a large input (a dataset, a model) placed on the device once, by content,
    and named by its device path in later calls instead of travelling with each (a warm
    container's mounted channel; an SSH device's dataset cache, kept across processes)."""

    def share_input(self, local: Path, digest: Callable[[], str]) -> tuple[str, str] | None:
        """(the device path of a copy of ``local``, a file or directory whose content hash
        ``digest()`` gives, called only where needed; what was done: `SENT`, `FOUND`, `RESENT`
        or `UNCHECKED`), or None where the runner cannot place it now (it then travels with
        the call)."""
        ...


@runtime_checkable
class SupportsSharedFolder(Protocol):
    """An optional capability: a folder of this host that the device writes in place (a warm
    container's mounted channel), where a job leaves large outputs for the host to copy (no
    archive round trip)."""

    def outbox(self, box: str) -> str | None:
        """The device path of a folder ``box`` (not made yet) where a job may write large
        outputs for this host to `collect` in place; None where there is none."""
        ...

    def collect(self, box: str, name: str, local: Path) -> None:
        """Copy file ``name`` of the outbox ``box`` to ``local`` and take it out of the
        outbox (checked: a regular file within the fetch limits; else
        `~edgehub.errors.DeviceOutputError`)."""
        ...

    def discard(self, box: str) -> None:
        """Remove the outbox ``box`` with its files."""
        ...


@runtime_checkable
class SupportsDeviceName(Protocol):
    """An optional capability: the runner names the hub.toml device it reaches in its messages
    (a `~edgehub.core.device.Device` sets it)."""

    device_name: str | None


@runtime_checkable
class SupportsNetworkAddress(Protocol):
    """An ability: the runner reaches its board at a network address (host, port, user, jump
    host, known_hosts), the one that host-key trust, leases (the board's identity) and a
    labgrid place's runner name."""

    @property
    def network_address(self) -> SSHConfig:
        """The settings the runner connects with."""
        ...


@runtime_checkable
class SupportsAgentRelay(SupportsAgentChannel, SupportsContentUpload, Protocol):
    """The capabilities a device-side agent needs (the SSH runner): content uploads, device
    paths, clean-up run when the connection is released, and a relay to the agent server that
    is kept for the connection's life."""

    def agent_relay(self, socket: str, argv: Sequence[str]) -> None:
        """Reach the agent server on device socket ``socket`` through a relay started with
        ``argv``."""
        ...

    def on_release(self, command: str, *, key: str) -> None:
        """Run shell line ``command`` on the device when the connection is released."""
        ...

    def absolute_path(self, remote: str | PurePath) -> str:
        """``remote`` as an absolute device path (``~`` and relative paths resolved)."""
        ...
