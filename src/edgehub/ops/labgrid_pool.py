"""Shared board pools on labgrid: pick a free place that matches, acquire it, release it after.

A hub.toml device with a ``[devices.X.labgrid]`` table (`LabgridConfig`) names a coordinator
and a place, or a place pattern and tags; `hold_place` acquires one free matching place for
the duration of a measurement (and releases it after success, failure and Ctrl-C) and yields
its `PlaceInfo`, whose ``address`` is the board's SSH address read from the place's
``NetworkService`` resource. The coordinator is reached through a `PlacePool`; the real one is
`edgehub.ops.labgrid_client.LabgridSession` (labgrid's client API, the optional extra
``edgehub[labgrid]``), imported only when such a device is used.

labgrid keeps a place acquired when the acquiring process dies without releasing it: such a
place shows its holder in `hub devices` and is freed with ``labgrid-client -p NAME release
--kick``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from edgehub.errors import DeviceBusyError, OperationCancelled

if TYPE_CHECKING:
    from edgehub.core.device.configs import LabgridConfig
    from edgehub.ops.project import Project

__all__ = [
    "PlaceInfo",
    "PlacePool",
    "device_places",
    "hold_place",
    "matching_places",
    "open_pool",
]

_POLL_S = 0.5


@dataclass(frozen=True)
class PlaceInfo:
    """A labgrid place as the coordinator describes it."""

    name: str
    tags: dict[str, str] = field(default_factory=dict)
    acquired_by: str | None = None  # "host/user"
    address: str | None = None
    username: str | None = None
    port: int | None = None


class PlacePool(Protocol):
    """What edgehub needs of a labgrid coordinator."""

    def places(self) -> list[PlaceInfo]: ...

    def acquire(self, name: str) -> bool:
        """True if acquired; False if someone else holds it (or took it first)."""
        ...

    def release(self, name: str) -> None: ...

    def close(self) -> None: ...


def _tags(config: LabgridConfig) -> dict[str, str]:
    pairs = (tag.partition("=") for tag in config.tags)
    return {key.strip(): value.strip() for key, _, value in pairs}


def matching_places(places: list[PlaceInfo], config: LabgridConfig) -> list[PlaceInfo]:
    """The places whose name matches ``config.place`` (a name or glob) and carry its tags."""
    wanted = _tags(config)
    return [
        place
        for place in places
        if fnmatch.fnmatchcase(place.name, config.place)
        and all(place.tags.get(k) == v for k, v in wanted.items())
    ]


class _Shared:
    """One session per coordinator and process, shared by its threads: the coordinator tells
    clients apart by their connection, which gRPC shares between the channels of a process."""

    _lock = threading.Lock()
    _open: ClassVar[dict[str, tuple[PlacePool, int]]] = {}

    def __init__(self, address: str) -> None:
        from edgehub.ops.labgrid_client import LabgridSession

        self.address = address
        with self._lock:
            session, users = self._open.get(address, (None, 0))
            if session is None:
                session = LabgridSession(address)
            self._open[address] = (session, users + 1)
        self.session = session

    def places(self) -> list[PlaceInfo]:
        return self.session.places()

    def acquire(self, name: str) -> bool:
        return self.session.acquire(name)

    def release(self, name: str) -> None:
        self.session.release(name)

    def close(self) -> None:
        with self._lock:
            session, users = self._open[self.address]
            if users > 1:
                self._open[self.address] = (session, users - 1)
                return
            del self._open[self.address]
        session.close()


def open_pool(config: LabgridConfig) -> PlacePool:
    """A session with the real coordinator ``config.coordinator`` (close it after use)."""
    return _Shared(config.coordinator)


def device_places(project: Project, device: str) -> list[PlaceInfo] | None:
    """The places of ``device``'s labgrid pool that match it, with who holds each (for `hub
    devices`, the TUI and the sweep); None when the device is not a labgrid pool device."""
    from edgehub.core.device.configs import LabgridConfig

    section = project.config.devices.get(device)
    if section is None or section.labgrid is None:
        return None
    config = LabgridConfig(**section.labgrid.values)
    pool = open_pool(config)
    try:
        return matching_places(pool.places(), config)
    finally:
        pool.close()


def _describe(config: LabgridConfig) -> str:
    tags = f" with tags {', '.join(config.tags)}" if config.tags else ""
    return f"place {config.place!r}{tags} on {config.coordinator}"


@contextlib.contextmanager
def hold_place(
    pool: PlacePool,
    config: LabgridConfig,
    *,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    cancelled: Callable[[float], bool] | None = None,
) -> Iterator[PlaceInfo]:
    """Acquire a free place matching ``config`` for the ``with`` block; release it after.

    While every matching place is held, ``on_wait`` is told once by whom; after ``timeout``
    seconds (default: ``config.acquire_timeout``) `DeviceBusyError` is raised."""
    limit = config.acquire_timeout if timeout is None else timeout
    deadline = time.monotonic() + limit
    told = False
    while True:
        candidates = matching_places(pool.places(), config)
        if not candidates:
            raise DeviceBusyError(f"no labgrid {_describe(config)}; check the coordinator's places")
        held = None
        for place in candidates:
            if place.acquired_by is None and pool.acquire(place.name):
                held = place
                break
        if held is not None:
            break
        holders = ", ".join(f"{p.name} by {p.acquired_by}" for p in candidates if p.acquired_by)
        if time.monotonic() >= deadline:
            raise DeviceBusyError(
                f"every labgrid {_describe(config)} is still held ({holders}) after "
                f"{limit:g} s; try again later"
            )
        if not told and on_wait is not None:
            on_wait(f"labgrid {_describe(config)}: all held ({holders}); waiting")
            told = True
        if cancelled is not None:
            if cancelled(_POLL_S):
                raise OperationCancelled("cancelled while waiting for a labgrid place")
        else:
            time.sleep(_POLL_S)
    fresh = next((p for p in pool.places() if p.name == held.name), held)
    try:
        yield fresh
    finally:
        pool.release(held.name)
