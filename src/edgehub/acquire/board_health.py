"""Board health: a quick probe before each measurement, and quarantine after repeated failures.

The probe depends on the device's kind (`probe_board`): an SSH board is connected to and asked,
in one command, whether the agent's Python (``ssh`` provider) runs and how much disk is free
in the login directory; a ``local`` device is not probed (a missing Docker daemon or image is
this host's to fix, not a board's fault: the step fails on it, recorded FAILED, with its own
one-line error, and nothing is counted); a labgrid place must match a ``NetworkService``
resource (its address). A failed probe fails the measurement on that board with the probe's
error (a pool moves on to another place).

Each board (`edgehub.acquire.boards.board_key`) has a `BoardHealth` in the project's store
directory (``board_health.json``, written atomically under a lock): its consecutive failures
and the last error. ``[project] quarantine_after`` failures in a row (default 3) quarantine the
board for ``quarantine_cooldown`` seconds (default 600): pools pass it over, sweeps skip it,
a measurement on it is refused at once. A passing probe clears the count; `hub devices
unquarantine NAME` clears it by hand. `device_health` is what `hub devices` (and a front end's
Devices screen) shows.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import DeviceUnhealthyError, EdgehubError, EnvironmentProblem
from edgehub.text import visible

if TYPE_CHECKING:
    from edgehub.acquire.labgrid_pool import PlaceInfo
    from edgehub.config.schema import HubConfig
    from edgehub.core.device.spec import Device
    from edgehub.runners.protocol import CommandRunner


_FILE = "board_health.json"
_FILE_MAX = 1 << 20
_ERROR_MAX = 300
_PROBE_TIMEOUT_S = 20.0
MIN_FREE_MB = 100
# $1: the agent's Python ("" for none); prints the free KiB of the login directory.
_PROBE_SH = r"""
if [ -n "$1" ]; then
  command -v "$1" >/dev/null 2>&1 || { echo "the agent's Python $1 is missing"; exit 3; }
fi
df -Pk . | awk 'NR==2 {print "free " $4}'
"""


@dataclass
class BoardHealth:
    """One board's record: failures in a row, the last error, and its quarantine (epoch s)."""

    board: str
    failures: int = 0
    last_error: str | None = None
    last_failed: float | None = None
    quarantined_until: float | None = None

    def quarantined(self, now: float | None = None) -> bool:
        until = self.quarantined_until
        return until is not None and (time.time() if now is None else now) < until

    def describe(self) -> str:
        """One line: ``quarantined until 02:10 after 3 failed checks: ERROR`` or the like."""
        if self.quarantined():
            until = time.strftime("%H:%M:%S", time.localtime(self.quarantined_until or 0))
            return (
                f"quarantined until {until} after {self.failures} failed health checks: "
                f"{self.last_error}"
            )
        if self.failures:
            return f"{self.failures} failed health check(s) in a row: {self.last_error}"
        return "healthy"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clean(text: str) -> str:
    return visible(text.strip()[:_ERROR_MAX])[:_ERROR_MAX]


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class HealthBook:
    """The boards' health records of one store directory, and the quarantine policy."""

    def __init__(self, folder: Path, *, after: int = 3, cooldown: float = 600.0) -> None:
        self.folder, self.after, self.cooldown = folder, after, cooldown

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, BoardHealth]]:
        """The records, under the book's lock; what the block leaves in the dict is saved."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(
                self.folder / f"{_FILE}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
            )
        except OSError as error:
            raise self._problem(error) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            records = self._read()
            before = {k: v.to_dict() for k, v in records.items()}
            yield records
            if {k: v.to_dict() for k, v in records.items()} != before:
                try:
                    self._write(records)
                except OSError as error:
                    raise self._problem(error) from None
        finally:
            os.close(fd)

    def _problem(self, error: OSError) -> EnvironmentProblem:
        return EnvironmentProblem(
            f"cannot keep the boards' health records in {self.folder}: {error.strerror} (a link "
            "planted there?); check who can write the run store"
        )

    def _read(self) -> dict[str, BoardHealth]:
        try:
            with open(self.folder / _FILE, "rb", opener=_no_follow) as handle:
                data = json.loads(handle.read(_FILE_MAX + 1)[:_FILE_MAX] or b"{}")
        except (OSError, ValueError, RecursionError):
            return {}
        found: dict[str, BoardHealth] = {}
        for board, item in data.items() if isinstance(data, dict) else []:
            if not isinstance(item, dict) or not isinstance(board, str):
                continue
            failures = item.get("failures")
            found[board] = BoardHealth(
                board=board[:_ERROR_MAX],
                failures=failures if isinstance(failures, int) and failures >= 0 else 0,
                last_error=_clean(str(item["last_error"])) if item.get("last_error") else None,
                last_failed=_number(item.get("last_failed")),
                quarantined_until=_number(item.get("quarantined_until")),
            )
        return found

    def _write(self, records: dict[str, BoardHealth]) -> None:
        data = {k: v.to_dict() for k, v in records.items() if v.failures or v.quarantined_until}
        temporary = self.folder / f".{_FILE}.{os.getpid()}.tmp"
        with open(temporary, "w", opener=_no_follow) as handle:
            json.dump(data, handle, indent=1)
        os.replace(temporary, self.folder / _FILE)

    def get(self, board: str) -> BoardHealth:
        """``board``'s record (read without the lock: the file is replaced whole; nothing is
        made by reading)."""
        return self._read().get(board) or BoardHealth(board)

    def failed(self, board: str, error: str) -> BoardHealth:
        """Count a failed probe of ``board``; quarantine it at the limit."""
        now = time.time()
        with self._locked() as records:
            record = records.setdefault(board, BoardHealth(board))
            record.failures += 1
            record.last_error, record.last_failed = _clean(error), now
            if record.failures >= self.after and not record.quarantined(now):
                record.quarantined_until = now + self.cooldown
            return record

    def clear(self, board: str) -> BoardHealth | None:
        """Forget ``board``'s failures and quarantine; what was recorded, if anything."""
        with self._locked() as records:
            return records.pop(board, None)

    def check(
        self,
        board: str,
        name: str,
        probe: Callable[[], None],
        on_fail: Callable[[str], None] | None = None,
    ) -> None:
        """Refuse a quarantined ``board`` (`DeviceUnhealthyError`), else run ``probe`` and
        record the outcome. A probe's `EdgehubError` is counted, ``on_fail`` is told the count
        in one line, and the error goes on as it is."""
        record = self.get(board)
        if record.quarantined():
            raise _refused(name, record)
        try:
            probe()
        except EdgehubError as error:
            record = self.failed(board, str(error))
            if on_fail is not None:
                now = ", now quarantined; see `hub devices`" if record.quarantined() else ""
                on_fail(
                    f"device {name!r} ({board}) failed its health check ({record.failures} in a "
                    f"row{now}): {record.last_error}"
                )
            raise
        if record.failures:  # passed: the count starts again
            self.clear(board)

    def skip_reason(self, board: str) -> str | None:
        """Why a pool passes ``board`` over (quarantined), or None."""
        record = self.get(board)
        return record.describe() if record.quarantined() else None


def _refused(name: str, record: BoardHealth) -> DeviceUnhealthyError:
    return DeviceUnhealthyError(
        f"device {name!r} ({record.board}) is {record.describe()}; fix the board and run "
        f"`hub devices unquarantine {name}`, or wait for the cool-down"
    )


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW, 0o600)  # a file it makes: the user's only


def health_book(config: HubConfig) -> HealthBook:
    """The health records of ``config``'s run store, with its quarantine policy."""
    settings = config.project
    return HealthBook(
        config.store_dir, after=settings.quarantine_after, cooldown=settings.quarantine_cooldown
    )


def probe_board(
    device: Device, runner: CommandRunner | None, place: PlaceInfo | None = None
) -> None:
    """Probe the board ``device`` is measured on (see the module docstring); raises an
    `EdgehubError` saying what is wrong. ``runner`` reaches an SSH board (None: none). The
    agent's Python is looked for, not run (a device's program runs only for a measurement)."""
    if place is not None and not place.address:
        raise DeviceUnhealthyError(
            f"labgrid place {place.name} matches no NetworkService resource (its exporter is "
            "down, or the place's match is wrong)"
        )
    if device.in_container:
        return  # this host: its own errors are recorded on the step's run (see the docstring)
    if runner is None:
        return
    python = _agent_python(device)
    with runner as connected:
        result = connected.run(
            ["sh", "-c", _PROBE_SH, "edgehub-health", python],
            hide=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    if not result.ok:
        raise DeviceUnhealthyError(
            _clean(result.stdout or result.stderr) or f"probe exited {result.returncode}"
        )
    lines = (line.split() for line in result.stdout.splitlines())
    free = next((words for words in lines if words[:1] == ["free"]), [])
    if len(free) == 2 and free[1].isdigit() and int(free[1]) < MIN_FREE_MB * 1024:
        raise DeviceUnhealthyError(f"only {int(free[1]) // 1024} MB free on the board's disk")


def _agent_python(device: Device) -> str:
    """The device's Python where its provider is edgehub's agent on the device, else ""."""
    from edgehub.toolchains.remote.config import SSHAgentConfig

    if device.provider_declaration is not SSHAgentConfig:
        return ""
    try:
        config = device.get_provider_config(SSHAgentConfig) or SSHAgentConfig()
    except TypeError:
        config = SSHAgentConfig()
    return str(config.python)


def board_keys(config: HubConfig, name: str) -> list[tuple[str, str]]:
    """(label, board key) of each board device ``name`` measures on: its own, or each matching
    place of its labgrid pool."""
    from edgehub.acquire.boards import board_key, place_board_key
    from edgehub.acquire.labgrid_pool import device_places, pool_config
    from edgehub.config.devices import to_device

    pool = pool_config(config, name)
    if pool is None:
        return [(name, board_key(to_device(config, name)))]
    return [(p.name, place_board_key(p, pool)) for p in device_places(config, name) or []]


def device_health(config: HubConfig, name: str) -> list[tuple[str, BoardHealth]]:
    """(label, record) of each of device ``name``'s boards that has failed checks recorded."""
    book = health_book(config)
    found = [(label, book.get(key)) for label, key in board_keys(config, name)]
    return [(label, record) for label, record in found if record.failures]


def unquarantine(config: HubConfig, name: str) -> list[str]:
    """Clear the failures and quarantine of device ``name``'s boards; what was cleared."""
    book = health_book(config)
    cleared = []
    for label, key in board_keys(config, name):
        record = book.clear(key)
        if record is not None and record.failures:
            cleared.append(f"{label} ({key}): was {record.describe()}")
    return cleared
