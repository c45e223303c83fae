"""Dead-peer detection: a device that stops answering ends its connection in bounded time.

TCP keepalives do not notice a device whose kernel still answers while its processes are frozen
(a paused container, a board stuck in a driver), and paramiko's own keepalive never waits for an
answer. So, as OpenSSH's ``ServerAliveInterval`` and ``ServerAliveCountMax`` do, the `Watchdog`
sends a keepalive request that sshd must answer after every ``interval`` seconds in which
nothing came from the device, and closes the transport once nothing at all (no answer, no data)
has come for ``interval * count`` seconds: every command and transfer on it then ends, and the
session says why (`Watchdog.silent_s`). `Link` is the socket under the transport, counting when
bytes last arrived.
"""

from __future__ import annotations

import threading
import time
from typing import Any

KEEPALIVE_REQUEST = "keepalive@openssh.com"


class Link:
    """A socket (or a jump host's channel) as paramiko uses it, noting when bytes last came."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self.last_received = time.monotonic()

    def recv(self, size: int) -> bytes:
        data: bytes = self._sock.recv(size)
        if data:
            self.last_received = time.monotonic()
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class Watchdog:
    """Watches ``transport`` over ``link``; `start` it once the login is done."""

    def __init__(self, transport: Any, link: Link, interval: float, count: int) -> None:
        self.interval = float(interval)
        self.limit = self.interval * max(1, int(count))
        self.silent_s: float | None = None  # set when it gave the device up
        self._transport = transport
        self._link = link
        self._stop = threading.Event()
        self._ping: threading.Thread | None = None
        self._ping_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._watch, name="edgehub-ssh-watchdog", daemon=True
        )

    def start(self) -> None:
        self._link.last_received = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        tick = min(1.0, self.interval / 2)
        while not self._stop.wait(tick):
            if not self._transport.is_active():
                return
            silent = time.monotonic() - self._link.last_received
            if silent >= self.limit:
                self.silent_s = silent
                self._transport.close()  # every channel on it ends now
                return
            if silent >= self.interval:
                self._send_ping()

    def answers(self, within: float) -> bool:
        """Whether the device answers now (a keepalive, within ``within`` seconds): a
        clean-up that needs the device is skipped when it does not."""
        asked = time.monotonic()
        if asked - self._link.last_received < 0.5:
            return True
        self._send_ping()
        while time.monotonic() - asked < within:
            if self._link.last_received >= asked:
                return True
            time.sleep(0.02)
        return False

    def _send_ping(self) -> None:
        """A keepalive that sshd answers, unless one is still waiting for its answer."""
        with self._ping_lock:
            if self._ping is not None and self._ping.is_alive():
                return
            # paramiko's wait=True blocks until the answer comes or the transport closes
            self._ping = threading.Thread(
                target=self._transport.global_request,
                args=(KEEPALIVE_REQUEST,),
                kwargs={"wait": True},
                name="edgehub-ssh-keepalive",
                daemon=True,
            )
            self._ping.start()
