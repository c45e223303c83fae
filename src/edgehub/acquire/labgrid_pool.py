"""Shared board pools on labgrid: pick a free place that matches, acquire it, release it after.

A hub.toml device with a ``[devices.X.labgrid]`` table (`LabgridConfig`) names a coordinator
and a place, or a place pattern and tags; `hold_place` acquires one free matching place for
the duration of a measurement (and releases it after success, failure and Ctrl-C) and yields
its `PlaceInfo`, whose ``address`` is the board's SSH address read from the place's
``NetworkService`` resource. The coordinator is reached through a `PlacePool`; the real one is
`edgehub.acquire.labgrid_client.LabgridSession` (labgrid's client API, the optional extra
``edgehub[labgrid]``), imported only when such a device is used.

labgrid keeps a place acquired when the acquiring process dies without releasing it. edgehub
therefore writes its holder into the place's comment and renews it
(`edgehub.acquire.place_holders`): a waiter takes over a place whose holder is provably gone,
and says whose it was. Places whose board is quarantined (`edgehub.acquire.board_health`) are
passed over.
"""

from __future__ import annotations

import contextlib
import fnmatch
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from edgehub.acquire.leases import Wait
from edgehub.errors import DeviceBusyError, DeviceUnhealthyError

if TYPE_CHECKING:
    from edgehub.config.schema import HubConfig
    from edgehub.core.device.configs import LabgridConfig


_POLL_S = 0.5
_GRACE_S = 1.0  # a gone holder must be seen gone this long before its place is taken


@dataclass(frozen=True)
class PlaceInfo:
    """A labgrid place as the coordinator describes it."""

    name: str
    tags: dict[str, str] = field(default_factory=dict)
    acquired_by: str | None = None  # "host/user"
    address: str | None = None
    username: str | None = None
    port: int | None = None
    comment: str = ""


class PlacePool(Protocol):
    """What edgehub needs of a labgrid coordinator."""

    def places(self) -> list[PlaceInfo]: ...

    def acquire(self, name: str) -> bool:
        """True if acquired; False if someone else holds it (or took it first)."""
        ...

    def release(self, name: str, fromuser: str | None = None) -> None:
        """Release ``name``; with ``fromuser``, only while that user holds it (a kick)."""
        ...

    def set_comment(self, name: str, comment: str) -> None: ...

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
        from edgehub.acquire.labgrid_client import LabgridSession

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

    def release(self, name: str, fromuser: str | None = None) -> None:
        self.session.release(name, fromuser)

    def set_comment(self, name: str, comment: str) -> None:
        self.session.set_comment(name, comment)

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


def pool_config(config: HubConfig, device: str) -> LabgridConfig | None:
    """``device``'s labgrid pool settings (its ``[devices.X.labgrid]`` table), or None."""
    from edgehub.core.device.configs import LabgridConfig

    section = config.devices.get(device)
    if section is None or section.labgrid is None:
        return None
    return LabgridConfig(**section.labgrid.values)


def device_places(config: HubConfig, device: str) -> list[PlaceInfo] | None:
    """The places of ``device``'s labgrid pool that match it, with who holds each (for `hub
    devices`, the TUI and the sweep); None when the device is not a labgrid pool device."""
    labgrid = pool_config(config, device)
    if labgrid is None:
        return None
    pool = open_pool(labgrid)
    try:
        return matching_places(pool.places(), labgrid)
    finally:
        pool.close()


_thread = threading.local()  # this thread's last held place, and the places it avoids


def last_held_place() -> str | None:
    """The name of the place this thread held last (its measurement's board), if any."""
    name = getattr(_thread, "held", None)
    return name if isinstance(name, str) else None


@contextlib.contextmanager
def avoiding(names: set[str]) -> Iterator[None]:
    """While the block runs, `hold_place` in this thread passes the places ``names`` over (a
    sweep cell retried after its board died goes to another board)."""
    before: frozenset[str] = getattr(_thread, "avoid", frozenset())
    _thread.avoid = before | names
    try:
        yield
    finally:
        _thread.avoid = before


def _describe(config: LabgridConfig) -> str:
    tags = f" with tags {', '.join(config.tags)}" if config.tags else ""
    return f"place {config.place!r}{tags} on {config.coordinator}"


def _take_over(pool: PlacePool, place: PlaceInfo, seen: dict[str, tuple[str, float]]) -> str | None:
    """Take ``place`` over when its edgehub holder is provably gone (seen so twice, a grace
    apart, so that a holder between acquiring and writing its record is not mistaken for the
    last one); what to say about it, or None."""
    from edgehub.acquire.place_holders import holder_of

    holder = holder_of(place.comment)
    reason = holder.gone() if holder is not None else None
    if holder is None or reason is None:
        seen.pop(place.name, None)
        return None
    first = seen.setdefault(place.name, (place.comment, time.monotonic()))
    if first[0] != place.comment:
        seen[place.name] = (place.comment, time.monotonic())
        return None
    if time.monotonic() - first[1] < _GRACE_S:
        return None
    pool.release(place.name, fromuser=place.acquired_by)
    if not pool.acquire(place.name):
        return None
    return (
        f"took labgrid place {place.name} over from {holder.describe()} "
        f"[{place.acquired_by}]: {reason}"
    )


@contextlib.contextmanager
def hold_place(
    pool: PlacePool,
    config: LabgridConfig,
    *,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    cancelled: Callable[[float], bool] | None = None,
    skip: Callable[[PlaceInfo], str | None] | None = None,
    on_take_over: Callable[[str], None] | None = None,
) -> Iterator[PlaceInfo]:
    """Acquire a free place matching ``config`` for the ``with`` block; release it after.

    A held place whose edgehub holder is gone is taken over (``on_take_over`` is told whose it
    was); a place for which ``skip`` gives a reason (its board is quarantined) is passed over.
    While every matching place is held, ``on_wait`` is told once by whom; after ``timeout``
    seconds (default: ``config.acquire_timeout``) `DeviceBusyError` is raised."""
    from edgehub.acquire.place_holders import Renewal

    limit = config.acquire_timeout if timeout is None else timeout
    wait = Wait(limit, "a labgrid place", on_wait, cancelled, _POLL_S)
    seen: dict[str, tuple[str, float]] = {}
    while True:
        candidates = matching_places(pool.places(), config)
        if not candidates:
            raise DeviceBusyError(f"no labgrid {_describe(config)}; check the coordinator's places")
        skipped = {p.name: why for p in candidates if skip is not None and (why := skip(p))}
        avoid: frozenset[str] = getattr(_thread, "avoid", frozenset())
        died = "its board died in this cell"
        skipped.update({p.name: died for p in candidates if p.name in avoid})
        held = None
        for place in candidates:
            if place.name in skipped:
                continue
            if place.acquired_by is None:
                if pool.acquire(place.name):
                    held = place
                    break
            elif (said := _take_over(pool, place, seen)) is not None:
                if on_take_over is not None:
                    on_take_over(said)
                held = place
                break
        if held is not None:
            break
        holders = ", ".join(
            f"{p.name} {skipped[p.name]}" if p.name in skipped else f"{p.name} by {p.acquired_by}"
            for p in candidates
            if p.acquired_by or p.name in skipped
        )
        if len(skipped) == len(candidates):
            raise DeviceUnhealthyError(
                f"every labgrid {_describe(config)} is passed over: {holders}; see `hub devices`"
            )
        wait.turn(
            f"every labgrid {_describe(config)} is still held ({holders}) after "
            f"{limit:g} s; try again later",
            f"labgrid {_describe(config)}: all held ({holders}); waiting",
        )
    fresh = next((p for p in pool.places() if p.name == held.name), held)
    _thread.held = held.name
    try:
        renewal = Renewal(pool, held.name, fresh.comment, config.holder_ttl)
    except BaseException:
        pool.release(held.name)
        raise
    try:
        yield fresh
    finally:
        renewal.stop()
        pool.release(held.name)
