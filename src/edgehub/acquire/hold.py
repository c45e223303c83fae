"""`hold`: a device held for a block of work; what operations ask for instead of leases.

Holding a device is taking its board: for a device with a ``[devices.X.labgrid]`` table, a free
place of its pool (`edgehub.acquire.labgrid_pool`), else the device's own board; and then the
board's lease (`edgehub.acquire.leases`, keyed by `edgehub.acquire.boards.board_key`), so that
two processes never measure on one board at once. With ``probe``, the held board's health is
checked first (`edgehub.acquire.board_health`): a quarantined board is refused (a pool passes
its place over) and a failing one is counted; a pool then tries its other places, a single
board fails the hold.

The `HeldDevice` yielded reaches the held board: for a labgrid place with an address, a copy of
the device whose runner (made by `place_runner`) connects to that address; else the device as
configured. The runner made here is closed, the lease dropped and the place released when the
block ends, however it ends (an exception, Ctrl-C, a cancellation).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from edgehub.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from edgehub.acquire.labgrid_pool import PlaceInfo
    from edgehub.config.schema import HubConfig
    from edgehub.core.device.spec import Device
    from edgehub.events import EventSink
    from edgehub.runners.protocol import CommandRunner


@dataclasses.dataclass(frozen=True)
class HeldDevice:
    """A device held for a block: ``device`` reaches the held board; ``place`` is the labgrid
    place held for it (None: the device's own board)."""

    device: Device
    place: PlaceInfo | None = None


def needs_hold(device: Device, *, measuring: bool) -> bool:
    """Whether work on ``device`` holds it: a measurement always, any step on a device whose
    provider does not work in containers here (`Device.in_container`) too; a device with no
    runner (a cloud service, which queues jobs itself) never."""
    if device.runner is None:
        return False
    return measuring or not device.in_container


@contextmanager
def hold(
    config: HubConfig,
    device: Device,
    *,
    timeout: float | None,
    command: str,
    events: EventSink,
    cancelled: Callable[[float], bool],
    probe: bool = False,
) -> Iterator[HeldDevice]:
    """Hold ``device`` of ``config`` for the ``with`` block (see the module docstring).

    ``timeout`` bounds the wait for the board (None: the lease's default hour); ``command`` is
    what a waiter is told holds it; ``events`` hears waits, take-overs and failed checks;
    ``cancelled(seconds)`` sleeps and returns True to give up (`OperationCancelled`)."""
    from edgehub.runners.protocol import SupportsNetworkAddress

    runner = device.runner
    if isinstance(runner, SupportsNetworkAddress) and runner.network_address.unusable:
        # SSH settings unusable as configured (a secret or known_hosts file not allowed, an
        # unset password variable): the configuration, not the board; no lease, probe or count
        raise ConfigError(runner.network_address.unusable)
    from edgehub.acquire.board_health import health_book
    from edgehub.acquire.boards import board_key, place_board_key
    from edgehub.acquire.labgrid_pool import pool_config
    from edgehub.acquire.leases import check_lease_timeout, device_lease

    check_lease_timeout(timeout)
    book = health_book(config)
    lease = functools.partial(
        device_lease, device=device.name, timeout=timeout, command=command,
        on_wait=events.warning, cancelled=cancelled,
    )  # fmt: skip
    labgrid = pool_config(config, device.name)
    if labgrid is None:
        board = board_key(device)
        if probe:
            book.check(board, device.name, lambda: None)  # a quarantined board: refused now
        with lease(board):
            if probe:
                book.check(board, device.name, lambda: _probe_board(device, None), events.warning)
            yield HeldDevice(device)
        return
    from edgehub.acquire.labgrid_pool import hold_place, open_pool
    from edgehub.errors import EdgehubError, OperationCancelled

    failed: dict[str, str] = {}

    def passed_over(place: PlaceInfo) -> str | None:
        if place.name in failed:
            return f"failed its health check just now ({failed[place.name]})"
        return book.skip_reason(place_board_key(place, labgrid)) if probe else None

    pool = open_pool(labgrid)
    try:
        while True:
            with hold_place(
                pool, labgrid, timeout=timeout, on_wait=events.warning, cancelled=cancelled,
                skip=passed_over, on_take_over=events.warning,
            ) as place:  # fmt: skip
                board = place_board_key(place, labgrid)
                said: list[str] = []
                try:
                    if probe:
                        check = functools.partial(_probe_board, device, place)
                        book.check(board, device.name, check, said.append)
                except OperationCancelled:
                    raise
                except EdgehubError as error:
                    why = said[0] if said else str(error)
                    events.warning(f"labgrid place {place.name}: {why}; trying another place")
                    failed[place.name] = str(error)[:200]
                    continue
                where = f"{place.username or '?'}@{place.address}:{place.port or 22}"
                events.info(f"device {device.name!r}: holding labgrid place {place.name} ({where})")
                with lease(board), _reaching(device, place) as held:
                    yield held
                return
    finally:
        pool.close()


@contextmanager
def _reaching(device: Device, place: PlaceInfo) -> Iterator[HeldDevice]:
    """``device`` held on ``place``: through a runner to the place's address, made here and
    closed after (as configured where its tools run in containers here, not on the board)."""
    if not place.address or device.in_container:
        yield HeldDevice(device, place)
        return
    runner = place_runner(device, place)
    try:
        yield HeldDevice(dataclasses.replace(device, runner=runner), place)
    finally:
        runner.__exit__(None, None, None)


def _probe_board(device: Device, place: PlaceInfo | None) -> None:
    """The health probe of the board ``device`` is held on (``place``: a labgrid place)."""
    from edgehub.acquire.board_health import probe_board

    runner: CommandRunner | None = None  # tools in containers here: no board to reach
    if not device.in_container:
        runner = device.runner
        if place is not None and place.address:
            runner = place_runner(device, place)
    probe_board(device, runner, place)


def place_runner(device: Device, place: PlaceInfo) -> CommandRunner:
    """A new runner to the labgrid place ``device`` holds: SSH to the board's address (the
    place's network service), keeping the key and known_hosts of the device's own ``ssh``
    table. The caller closes it."""
    from edgehub.runners.protocol import SupportsNetworkAddress
    from edgehub.runners.ssh import SSHCommandRunner, SSHConfig

    runner = device.runner
    base = runner.network_address if isinstance(runner, SupportsNetworkAddress) else None
    user = place.username or (base.username if base is not None else None)
    if user is None:
        raise UsageError(
            f"labgrid place {place.name} names no SSH user for device {device.name!r}; give "
            f"one with [devices.{device.name}.ssh] user = ..."
        )
    host, port = str(place.address), int(place.port or 22)
    ssh = (
        dataclasses.replace(base, host=host, port=port, username=user)
        if base is not None
        else SSHConfig(host=host, port=port, username=user)
    )
    return SSHCommandRunner(ssh)


def board_count(config: HubConfig, device: str) -> int:
    """How many boards ``device`` can be held on at once: one, or for a labgrid pool device
    the matching places that have their resources (an address) and are not quarantined."""
    from edgehub.acquire.board_health import health_book
    from edgehub.acquire.boards import place_board_key
    from edgehub.acquire.labgrid_pool import device_places, pool_config

    labgrid = pool_config(config, device)
    places = device_places(config, device)
    if labgrid is None or places is None:
        return 1
    book = health_book(config)
    usable = [
        p for p in places if p.address and book.skip_reason(place_board_key(p, labgrid)) is None
    ]
    return max(1, len(usable))
