"""Who holds a labgrid place that edgehub acquired, and when a waiter may take the place over.

The holder appends ``[edgehub held by HOST:PID:TICKS since EPOCH until EPOCH]`` (its process,
`edgehub.procid`) to the place's comment right after acquiring it, renews ``until`` (now plus
the device's ``holder_ttl``) every third of that TTL while it runs, and gives the comment back
as it was on release. A waiter may take a held place over when that record says the holder is
gone: a process of this host that no longer runs (or whose pid now names another process), or
a holder of any host that stopped renewing (``until`` passed: it died, or its host went down).
A live holder of this host is never taken over, nor a place held without such a record (by
``labgrid-client`` or another tool): `hub devices release NAME --force` frees those.

The comment is anyone's to write: what is read from it is parsed strictly and bounded.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgehub.procid import ProcessId, this_process

if TYPE_CHECKING:
    from edgehub.acquire.labgrid_pool import PlacePool
    from edgehub.config.schema import HubConfig


_RECORD = re.compile(
    r" ?\[edgehub held by ([A-Za-z0-9._-]{1,255}:\d{1,10}:\d{0,20}) since (\d{1,12}) "
    r"until (\d{1,12})\]"
)
_COMMENT_MAX = 2000


@dataclass(frozen=True)
class PlaceHolder:
    """The process that holds a place, as its record says, and until when its lease runs."""

    process: ProcessId
    since: float
    until: float

    def gone(self, now: float | None = None) -> str | None:
        """Why the holder is provably gone (None while it may run): its process ended here,
        or its lease passed its TTL unrenewed."""
        alive = self.process.alive()
        if alive is False:
            return "its process is gone"
        now = time.time() if now is None else now
        if alive is None and now > self.until:
            return f"its lease ran out {now - self.until:.0f} s ago without renewal"
        return None

    def describe(self) -> str:
        started = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"{self.process.host} pid {self.process.pid} (since {started})"


def holder_of(comment: str) -> PlaceHolder | None:
    """The edgehub holder record in a place's ``comment``, if there is one."""
    found = _RECORD.search(comment[:_COMMENT_MAX])
    if found is None:
        return None
    process = ProcessId.parse(found.group(1))
    if process is None:
        return None
    return PlaceHolder(process, float(found.group(2)), float(found.group(3)))


def without_holder(comment: str) -> str:
    """``comment`` without edgehub's holder record (what it was before edgehub acquired)."""
    return _RECORD.sub("", comment[:_COMMENT_MAX])


def with_holder(comment: str, process: ProcessId, since: float, until: float) -> str:
    """``comment`` carrying ``process`` as the holder, leased until ``until``."""
    record = f"[edgehub held by {process.marker} since {since:.0f} until {until:.0f}]"
    base = without_holder(comment)
    return f"{base} {record}" if base else record


class Renewal:
    """Writes this process into a held place's comment and renews it until `stop`."""

    def __init__(self, pool: PlacePool, place: str, comment: str, ttl: float) -> None:
        self.pool, self.place, self.ttl = pool, place, ttl
        self.base = without_holder(comment)
        self.me, self.since = this_process(), time.time()
        self._stop = threading.Event()
        self._write()
        self._thread = threading.Thread(target=self._run, name="edgehub-place-lease", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        until = time.time() + self.ttl
        self.pool.set_comment(self.place, with_holder(self.base, self.me, self.since, until))

    def _run(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            # a lost session: the next try may reach the coordinator again
            with contextlib.suppress(Exception):
                self._write()

    def stop(self) -> None:
        """Stop renewing and give the place its comment back."""
        self._stop.set()
        self._thread.join(10)
        with contextlib.suppress(Exception):  # released next anyway; the record runs out
            self.pool.set_comment(self.place, self.base)


def release_device(config: HubConfig, name: str, *, force: bool = False) -> list[str]:
    """Free device ``name``'s labgrid places whose edgehub holder is gone; with ``force``,
    every held place (a live holder's too: it loses the board mid-measurement). What was done,
    a line per place. A device without a ``labgrid`` table has only its local lease, which the
    kernel frees when its holder ends: nothing to release."""
    from edgehub.acquire.boards import board_key
    from edgehub.acquire.labgrid_pool import matching_places, open_pool, pool_config
    from edgehub.acquire.leases import lease_holder
    from edgehub.config.devices import to_device
    from edgehub.errors import UsageError

    if name not in config.devices:
        known = ", ".join(config.devices)
        raise UsageError(f"device {name!r} not in hub.toml; known: {known}")
    labgrid = pool_config(config, name)
    if labgrid is None:
        local = lease_holder(board_key(to_device(config, name)))
        state = f"last held by {local.describe()}" if local else "not held"
        return [
            f"{name}: a local lease ({state}); the kernel frees it when its holder exits, "
            "so there is nothing to release"
        ]
    pool = open_pool(labgrid)
    said = []
    try:
        for place in matching_places(pool.places(), labgrid):
            if place.acquired_by is None:
                said.append(f"{place.name}: free")
                continue
            holder = holder_of(place.comment)
            why = holder.gone() if holder is not None else None
            who = holder.describe() if holder is not None else "a holder that is not edgehub"
            if why is None and not force:
                said.append(
                    f"{place.name}: held by {who} [{place.acquired_by}], which may still run; "
                    "not released (--force releases it anyway)"
                )
                continue
            pool.release(place.name, fromuser=place.acquired_by)
            pool.set_comment(place.name, without_holder(place.comment))
            reason = why or "forced"
            said.append(f"{place.name}: released from {who} [{place.acquired_by}]: {reason}")
    finally:
        pool.close()
    return said
