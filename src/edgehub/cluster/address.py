"""Cluster addresses: ``ray://HOST:PORT`` (Ray client), ``HOST:PORT`` (the head's GCS),
``auto`` (the cluster this machine belongs to) and ``local:N`` (a Ray instance here with N
workers); read, and checked to answer, before Ray is asked (it would retry for minutes)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from edgehub.errors import EnvironmentProblem, UsageError

_FORMS = '"ray://HOST:10001", "HOST:6379", "auto" or "local:N"'


@dataclass(frozen=True)
class ClusterAddress:
    """A parsed address; ``workers`` is set for ``local:N`` only."""

    text: str
    host: str | None = None
    port: int | None = None
    workers: int | None = None

    @property
    def local(self) -> bool:
        return self.workers is not None

    def check_reachable(self, timeout: float = 3.0) -> None:
        """Raise `EnvironmentProblem` (exit 3) in one line when HOST:PORT does not answer."""
        if self.host is None or self.port is None:
            return
        try:
            socket.create_connection((self.host, self.port), timeout=timeout).close()
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise unreachable(self.text, reason) from None


def unreachable(text: str, reason: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"Ray cluster {text} is out of reach ({reason}); start it (`ray start --head` on the "
        "head) or fix --cluster / [cluster] address in hub.toml"
    )


def parse_address(text: str) -> ClusterAddress:
    """The address ``text`` names; a `UsageError` saying the forms when it names none."""
    text = text.strip()
    if text == "auto":
        return ClusterAddress(text)
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or not 1 <= int(count) <= 256:
            raise UsageError(f"cluster address {text!r}: N of local:N must be 1 to 256")
        return ClusterAddress(text, workers=int(count))
    rest = text.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"cluster address {text!r} is not one of {_FORMS}")
    return ClusterAddress(text, host=host.strip("[]"), port=int(port))
