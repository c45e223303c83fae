"""SSH: the `SSHCommandRunner` and what it is made of.

Modules: ``config`` (`SSHConfig`, a leaf), ``known_hosts`` (host key trust), ``connect``
(socket, handshake, login), ``watchdog`` (dead-peer detection), ``session`` (one shared
connection), ``janitor`` (the connection's work folder on the device, which ends with it),
``shell`` (the quoted command lines), ``files`` (SFTP and tar transfers), ``runner``. paramiko
loads on first connection.
"""

from __future__ import annotations

from edgehub.runners.ssh.config import SSHConfig
from edgehub.runners.ssh.files import TransferStats
from edgehub.runners.ssh.runner import SSHCommandRunner

__all__ = ["SSHCommandRunner", "SSHConfig", "TransferStats"]
