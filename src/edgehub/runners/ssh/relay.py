"""The SSH runner's line to a resident agent server on the device: one relay channel.

The relay (``edgehub-agent relay``, ``edgehub.agent.server.relay``) runs on a channel of its
own for as long as the connection; each job goes down its stdin as the very bytes a job's
socket connection carries, and the server's answer comes back on its stdout in frames (``D``
bytes, ``E`` end of job, ``N`` not taken), read here with the same `Reply` parser as the
Docker runner's direct channel. So a warm job costs one round trip: no channel to open, no
Python to start on the device. Closing the channel ends the relay, which closes the job's
connection, so the server kills the job: that is how `RelayJob.kill` stops a job (a timeout,
`cancel`, Ctrl-C), and the next job opens a new relay. `benchmarks/bench_ssh.py` (b) keeps a
warm invoke through it against a bare script.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from typing import Any

from edgehub.agent.server.relay import DATA, END, NOT_TAKEN
from edgehub.errors import DeviceOutputError
from edgehub.runners.agent_reply import Refused, ReplyJob, read_start
from edgehub.runners.ssh.session import SSHSession
from edgehub.runners.ssh.shell import build_command

FRAME = struct.Struct(">cI")
START_TIMEOUT_S = 10.0  # a job the server has not started by then is passed over
MAX_FRAME = 1 << 20  # the relay sends frames of at most 64 KiB


class AgentRelay:
    """A relay started with ``argv`` on a channel of ``session``; ``lock`` is held by the job
    in flight. ``closed`` once its channel is (it is not reused then)."""

    def __init__(self, session: SSHSession, argv: list[str]) -> None:
        self.lock = threading.Lock()
        self.generation = session.generation
        self.jobs = 0  # jobs the server took through this relay
        self._buffer = b""
        self._channel: Any = session.start(build_command(argv, None, None), keep_stdin=True)

    @property
    def closed(self) -> bool:
        channel = self._channel
        return bool(channel.closed or channel.eof_received or channel.exit_status_ready())

    def send(self, data: bytes) -> None:
        self._channel.sendall(data)

    def settimeout(self, seconds: float | None) -> None:
        self._channel.settimeout(seconds)

    def frames(self) -> Iterator[tuple[bytes, bytes]]:
        """(kind, payload) as they come; ends when the channel does."""
        while True:
            while len(self._buffer) >= FRAME.size:
                kind, size = FRAME.unpack_from(self._buffer)
                if size > MAX_FRAME:
                    self.close()
                    raise DeviceOutputError(
                        f"the agent relay on the device sent a frame of {size} bytes (at most "
                        f"{MAX_FRAME} expected); is the device's edgehub agent genuine?"
                    )
                if len(self._buffer) < FRAME.size + size:
                    break
                payload = self._buffer[FRAME.size : FRAME.size + size]
                self._buffer = self._buffer[FRAME.size + size :]
                yield kind, payload
            try:
                data = self._channel.recv(1 << 20)
            except (OSError, EOFError):  # a timeout, or the channel closed under us
                data = b""
            if not data:
                self.close()
                return
            self._buffer += data

    def close(self) -> None:
        """End the relay (and so the job in flight, if any)."""
        self._channel.close()


class _NotTaken(Exception):
    """The relay found no server for the job."""


class RelayJob(ReplyJob):
    """The runner base's `~edgehub.runners.base.Process` for one job sent down ``relay``
    (``payload``: the request line and the files). Raises `Refused` when nothing ran."""

    def __init__(self, relay: AgentRelay, payload: bytes) -> None:
        self._relay = relay
        self._ended = False
        try:
            relay.settimeout(START_TIMEOUT_S)
            relay.send(payload)
            self._frames = relay.frames()
            self._rest = read_start(self._answer_start())
            relay.settimeout(None)
        except _NotTaken as error:
            raise Refused(str(error)) from None
        except (TimeoutError, OSError, Refused) as error:
            relay.close()  # what is left of that answer would come before the next one
            raise Refused(str(error)) from error
        relay.jobs += 1

    def _answer_start(self) -> Iterator[bytes]:
        """The answer's first data frames (up to its start line, `read_start`)."""
        for kind, data in self._frames:
            if kind == NOT_TAKEN:  # the relay is fine and waits for the next job
                raise _NotTaken(data.decode("utf-8", "replace"))
            if kind != DATA:
                raise Refused("the server closed the connection")
            yield data

    def _chunks(self) -> Iterator[bytes]:
        if self._rest:
            yield self._rest
        for kind, data in self._frames:
            if kind != DATA:
                self._ended = kind == END
                return
            yield data

    def kill(self) -> None:
        """Close the relay's channel: the relay closes the job's connection, the server kills
        the job."""
        self._relay.close()

    def close(self) -> None:
        if not self._ended:  # stopped, or the answer broke off: this relay is done
            self._relay.close()
