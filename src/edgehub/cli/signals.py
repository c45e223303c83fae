"""SIGTERM and SIGHUP stop `hub` the way Ctrl-C does: runs end KILLED, containers go.

`timeout`, CI runners and systemd stop processes with SIGTERM, and a closed terminal (a
dropped SSH session) sends SIGHUP. Both raise `Stopped` (a `KeyboardInterrupt`) in the main
thread, so the same clean-up path as Ctrl-C runs. After SIGHUP the terminal is gone, so
stdout and stderr are pointed at /dev/null first. A second signal during clean-up is ignored.
`received` names the signal even where a library turned `Stopped` into a plain
`KeyboardInterrupt` or the clean-up into a cancellation (Ray's waits do), so that `hub` still
exits 128 + its number.
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import FrameType

_SIGNALS = tuple(
    s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s
)


class Stopped(KeyboardInterrupt):
    """`hub` received SIGTERM or SIGHUP."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _silence_terminal() -> None:
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)


_received: list[int] = []


def received() -> int | None:
    """The stop signal this process received (SIGTERM or SIGHUP), or None."""
    return _received[0] if _received else None


def _handle(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    for other in _SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    if signum == getattr(signal, "SIGHUP", None):
        _silence_terminal()
    raise Stopped(signum)


def install() -> None:
    """Turn SIGTERM and SIGHUP into `Stopped` (call once, from the main thread)."""
    for signum in _SIGNALS:
        signal.signal(signum, _handle)
