"""Which board a device is: the identity that leases key on, not the device's name.

Two hub.toml names for one board must exclude each other, and a result is about the board it
ran on; `board_key` gives the one string for both:

- an SSH device: ``ssh:HOST:PORT``, its ``~/.ssh/config`` alias resolved and the host name
  looked up here (the first IPv4 address, else the first address; the name itself when it does
  not resolve within a few seconds); with a jump host, ``ssh:HOST:PORT via ssh:JHOST:JPORT``
  (the target's name then resolves on the jump host, so it stays as written, lower-cased);
- a held place of a labgrid pool: by its address (`place_board_key`), as an SSH device there;
- a device whose provider works in containers here (`Device.in_container`: ``local``):
  ``docker:ENDPOINT``, the Docker daemon its containers run on;
- a device with no runner, a cloud service (``qai_hub``, ``aws``): ``cloud:PROVIDER:SPEC``;
- any other device (its tool runs on this host): ``host:HOSTNAME``.

`ssh_board` and `docker_endpoint` are the one resolver of where an SSH device or the local Docker
daemon is; `edgehub.ops.device_identity` uses them too, without the DNS look-up.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.acquire.labgrid_pool import PlaceInfo
    from edgehub.core.device.configs import LabgridConfig
    from edgehub.core.device.spec import Device
    from edgehub.runners.ssh.config import SSHConfig


_LOOKUP_S = 5.0


@dataclass(frozen=True)
class SSHBoard:
    """Where an SSH device is: its host and port, and its jump host's when it has one."""

    host: str
    port: int
    jump_host: str | None = None
    jump_port: int = 22


def ssh_board(config: SSHConfig, *, look_up: bool) -> SSHBoard:
    """The board an SSH device's settings reach: an alias, port and jump host completed from
    ``~/.ssh/config``; names lower-cased without a trailing dot, IP literals normalised. With
    ``look_up``, the name that this host connects to (the jump host's, when there is one: the
    target's name then resolves on the jump host) is looked up in DNS, bounded in time; without
    it, no name is looked up. A `ConfigError` where ``~/.ssh/config`` or the jump host is bad."""
    from edgehub.runners.ssh.user_config import jump_config, resolve

    where = _address if look_up else _name
    config = resolve(config)
    if config.jump_host is None:
        return SSHBoard(where(config.host), config.port)
    jump = jump_config(config)
    return SSHBoard(_name(config.host), config.port, where(jump.host), jump.port)


def board_key(device: Device) -> str:
    """The identity of the board ``device`` runs on (see the module's docstring)."""
    from edgehub.runners.protocol import SupportsNetworkAddress

    if isinstance(device.runner, SupportsNetworkAddress):
        return ssh_board_key(device.runner.network_address)
    if device.runner is None:  # a service that runs the jobs itself
        return f"cloud:{device.provider_type}:{device.spec.device_name or device.name}"
    if device.in_container:
        return docker_board_key()
    return f"host:{socket.gethostname().lower()}"


def ssh_board_key(config: SSHConfig) -> str:
    """``ssh:HOST:PORT`` (`` via ssh:…`` for a jump host) of an SSH device's settings."""
    board = ssh_board(config, look_up=True)
    key = f"ssh:{board.host}:{board.port}"
    return key if board.jump_host is None else f"{key} via ssh:{board.jump_host}:{board.jump_port}"


def place_board_key(place: PlaceInfo, config: LabgridConfig) -> str:
    """The board a held labgrid place is: ``ssh:ADDRESS:PORT`` when the coordinator gives the
    place an address (so an SSH device at that address is the same board), else
    ``labgrid:COORDINATOR/PLACE``."""
    if place.address:
        return f"ssh:{_address(str(place.address))}:{int(place.port or 22)}"
    return f"labgrid:{config.coordinator}/{place.name}"


def docker_board_key() -> str:
    """``docker:ENDPOINT`` (`docker_endpoint`)."""
    return f"docker:{docker_endpoint()}"


def docker_endpoint() -> str:
    """The daemon that ``local`` devices' containers run on: ``context:NAME`` for a Docker
    context, else ``$DOCKER_HOST``, else the default socket; a local socket by its real path."""
    context = os.environ.get("DOCKER_CONTEXT")
    if context:
        return f"context:{context}"
    from edgehub.runners.docker.client import docker_host

    host = docker_host() or "unix:///var/run/docker.sock"
    if host.startswith("unix://"):
        return f"unix://{os.path.realpath(host[len('unix://') :])}"
    return host


def _name(host: str) -> str:
    name = host.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        return name


@functools.lru_cache(maxsize=64)
def _address(host: str) -> str:
    """``host`` as an address: an IP literal normalised, a name looked up (bounded in time)."""
    name = _name(host)
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(name)
        return name
    found: list[tuple[int, str]] = []

    def look_up() -> None:
        with contextlib.suppress(OSError, UnicodeError):
            for family, _, _, _, sockaddr in socket.getaddrinfo(
                name, None, type=socket.SOCK_STREAM
            ):
                found.append((0 if family == socket.AF_INET else 1, str(sockaddr[0])))

    thread = threading.Thread(target=look_up, name="edgehub-board-lookup", daemon=True)
    thread.start()
    thread.join(_LOOKUP_S)
    if thread.is_alive() or not found:
        return name
    return min(found)[1]
