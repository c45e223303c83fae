"""The typed schema of ``hub.toml`` and the checks that turn parsed TOML into it.

``hub.toml`` sits at the root of a project; edgehub finds it in the current directory or one of
its parents. Every table and key is optional unless marked *required*::

    [project]
    name = "my-project"        # default: the name of the directory holding hub.toml
    store = ".hub"             # the local run store, relative to hub.toml
    quarantine_after = 3       # failed health checks in a row that quarantine a board
    quarantine_cooldown = 600.0  # seconds a quarantined board is passed over

    [images]
    base = "edgehub-base:bookworm"              # base image for `hub images build`
    onnxruntime = "edgehub-onnxruntime:custom"  # tag override for one runtime's image
                                                # (any registered runtime's image name)

    [cluster]                  # `hub exec sweep --cluster` without an address
    address = "ray://head:10001"   # a Ray cluster: "ray://HOST:PORT", "HOST:PORT", "auto"
                                   # or "local:N" (a Ray instance here with N workers)

    [devices.<name>]           # <name>: letters, digits, '_' and '-'
    provider = "embedl_onnxruntime"   # any string; built-in meanings below
    spec = "Raspberry Pi 5"           # DeviceSpec.device_name (a catalog name or description)

    [devices.<name>.ssh]       # reach the device over SSH (SSHCommandRunner)
    host = "192.168.1.20"      # required
    user = "pi"                # required
    port = 22
    key = "~/.ssh/id_ed25519"  # private key; '~' and paths relative to hub.toml are resolved
    known_hosts = "~/.ssh/known_hosts"  # one inside the project: only where the user allows it
    password_env = "EDGEHUB_SSH_PASSWORD_RPI"  # read the password from this variable (see below)
    connect_timeout = 10.0     # seconds
    keepalive = 15.0           # seconds of silence before a keepalive; 0 turns them off
    keepalive_count = 3        # unanswered keepalives before the device counts as gone
    step_timeout = 3600.0      # seconds a command may run on the device; 0: no limit
    jump_host = "me@bastion:22"  # reach it through this host ("[user@]host[:port]" or an alias)
                               # ~/.ssh/config's HostName, Port, IdentityFile and ProxyJump for
                               # `host` apply where these keys leave them unset

    [devices.<name>.<settings>]       # the provider's settings table, see below

    [devices.<name>.overrides.<Component>.<settings>]
    cli_args = ["--exec-providers", "CPUExecutionProvider"]

Providers and their settings tables: each `ProviderConfig` dataclass with a ``provider_type``
defines one (`edgehub.config.settings`), its keys being the dataclass fields. Built in:

=======================  ======================  ==========================================
provider                 settings table          keys (from the dataclass)
=======================  ======================  ==========================================
``local``                ``docker``              `DockerConfig`: ``cpus`` (number),
                                                 ``memory`` ("4g"), ``keep_warm`` (seconds
                                                 a container stays up idle for the next
                                                 job), ``image`` (tag override),
                                                 ``host`` (the Docker daemon,
                                                 "ssh://user@host"; default DOCKER_HOST)
``embedl_onnxruntime``   ``embedl_onnxruntime``  `EmbedlONNXRuntimeConfig`: ``path``,
                                                 ``cli_args`` (array of strings)
``trtexec``              ``trtexec``             `TrtexecConfig`: ``path``, ``cli_args``
``qai_hub``, ``aws``     none                    ``spec`` is required (the catalog name)
a runtime's provider     its config's table      the ``provider_configs`` of a registered
                                                 runtime (`edgehub.core.runtimes`)
any other string         none                    (configure custom providers in Python)
=======================  ======================  ==========================================

``[devices.<name>.labgrid]`` (`LabgridConfig`: ``coordinator`` "HOST:PORT", ``place`` (a name
or glob), ``tags`` (array of "key=value"), ``acquire_timeout``, ``holder_ttl``) makes the device
a place of a shared labgrid pool, whatever its provider: a measurement acquires a free matching
place first.

A settings table that does not belong to the device's provider is an error. ``ssh`` is refused
for ``local`` (it runs on this host) and for the cloud providers. A device with another
provider and no ``ssh`` table runs its tools on this host.

``overrides`` gives one component its own settings on this device. ``<Component>`` is the class
name of a registered runtime's component (``ONNXRuntimeProfiler``, ...) or, for your own
components, a qualified name in quotes (``"mypkg.components.MyCompiler"``). An override table
starts from the device's settings table: keys it leaves out keep the device's values.

Secrets are never stored in hub.toml: a ``password`` (or token) key is refused. Use a key file
or the SSH agent, or name an environment variable with ``password_env``. A hub.toml comes with a
repository, so it cannot choose a secret on its own: the variable must start with
``EDGEHUB_SSH_PASSWORD`` or be one the user allowed (``$EDGEHUB_PASSWORD_ENVS``, or
``password_envs`` in ``~/.config/edgehub/trust.toml``); likewise a ``known_hosts`` file inside
the project vouches for a host only once the user allows it (``$EDGEHUB_KNOWN_HOSTS``, or
``known_hosts`` in trust.toml). See `edgehub.config.user_trust`.

If no device is named ``local``, an implicit one (``provider = "local"``, no limits) is added
after the declared devices. A device named ``local`` without a ``provider`` gets ``"local"``;
any other device without one has no provider type (usable with ``@hub_run`` only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from edgehub.config.settings import ProviderSettings
from edgehub.core.values import Matches, Range
from edgehub.errors import ConfigError

__all__ = [
    "CLOUD_PROVIDERS",
    "CONFIG_FILENAME",
    "DEVICE_NAME_PATTERN",
    "DOTTED_KEY_PATTERN",
    "ENV_NAME",
    "ClusterSection",
    "DeviceSection",
    "HubConfig",
    "ImagesSection",
    "KeyPath",
    "ProjectSection",
    "ProviderSettings",
    "SSHSection",
    "SchemaError",
    "format_key",
    "location",
    "nearest_line",
    "parse_key",
]

CONFIG_FILENAME = "hub.toml"
CLOUD_PROVIDERS = ("qai_hub", "aws")

KeyPath = tuple[str, ...]
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
DEVICE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]*"
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
DOTTED_KEY_PATTERN = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_KEY_PART_RE = re.compile(_KEY_PART)
ENV_NAME = Matches(r"[A-Za-z_][A-Za-z0-9_]*", "the name of an environment variable")


class SchemaError(ConfigError):
    """A value in hub.toml breaks the schema. ``key`` is the offending key path and ``line`` its
    line, when known (the loader fills it in and prefixes the message with ``file:line:``)."""

    def __init__(self, key: KeyPath, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.line = line


# --- the typed sections ---------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectSection:
    """``[project]``: its keys are these fields, their bounds the ``Range`` of the annotations
    (read by the checker and by `edgehub.config.json_schema`)."""

    name: str
    store: str = ".hub"
    quarantine_after: Annotated[int, Range(1, 1000)] = 3
    quarantine_cooldown: Annotated[float, Range(0, open_low=True)] = 600.0


@dataclass(frozen=True)
class ImagesSection:
    base: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterSection:
    """``[cluster]``: the Ray cluster sweeps run on when ``--cluster`` names none."""

    address: str | None = None


@dataclass(frozen=True)
class SSHSection:
    """``[devices.<name>.ssh]``: its keys are these fields, their bounds the ``Range``/``Matches``
    of the annotations (read by the checker and by `edgehub.config.json_schema`)."""

    host: str
    user: str
    port: Annotated[int, Range(1, 65535)] = 22
    key: str | None = None
    known_hosts: str | None = None
    password_env: Annotated[str, ENV_NAME] | None = None
    connect_timeout: Annotated[float, Range(0, open_low=True)] = 10.0
    keepalive: Annotated[float, Range(0)] = 15.0
    keepalive_count: Annotated[int, Range(1, 1000)] = 3
    step_timeout: Annotated[float, Range(0)] = 3600.0
    jump_host: str | None = None


@dataclass(frozen=True)
class DeviceSection:
    """One ``[devices.<name>]`` table. ``settings`` holds its provider's settings table (empty
    values when the file has none; ``None`` for providers without one); ``overrides`` maps a
    component name to its own settings. ``implicit`` marks the ``local`` device added by
    default."""

    name: str
    provider: str | None = None
    spec: str | None = None
    ssh: SSHSection | None = None
    settings: ProviderSettings | None = None
    overrides: Mapping[str, ProviderSettings] = field(default_factory=dict)
    implicit: bool = False
    labgrid: ProviderSettings | None = None  # [devices.<name>.labgrid]: a labgrid pool place


@dataclass(frozen=True)
class HubConfig:
    """A loaded hub.toml. ``path`` is ``None`` for the default config (no file found);
    ``root`` is the directory relative paths resolve against (hub.toml's, else the cwd)."""

    path: Path | None
    project: ProjectSection
    images: ImagesSection
    devices: Mapping[str, DeviceSection]
    root: Path
    lines: Mapping[KeyPath, int] = field(default_factory=dict, repr=False, compare=False)
    cluster: ClusterSection = field(default_factory=ClusterSection)

    @property
    def store_dir(self) -> Path:
        """The run store directory (``project.store`` resolved against ``root``)."""
        return self.root / Path(self.project.store).expanduser()

    def line_of(self, key: KeyPath) -> int | None:
        """The line defining ``key`` (or its nearest enclosing table), if known."""
        return nearest_line(self.lines, key)

    def where(self, key: KeyPath) -> str:
        """``hub.toml:14`` for ``key``: the prefix of an error message about it."""
        return location(self.path, self.line_of(key))


def nearest_line(lines: Mapping[KeyPath, int], key: KeyPath) -> int | None:
    """The line of ``key``, else of the nearest enclosing table found in ``lines``."""
    return next((lines[key[:end]] for end in range(len(key), 0, -1) if key[:end] in lines), None)


def location(path: Path | None, line: int | None, column: int | None = None) -> str:
    """``file:line[:column]``, the file shown relative to the cwd when it lies below it."""
    if path is None:
        shown = CONFIG_FILENAME
    else:
        try:
            shown = str(path.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            shown = str(path)
    parts = [shown]
    if line is not None:
        parts.append(str(line))
        if column is not None:
            parts.append(str(column))
    return ":".join(parts)


def format_key(key: Sequence[str]) -> str:
    """A dotted key as TOML writes it (segments that are not bare keys are quoted)."""
    return ".".join(part if _BARE_KEY.fullmatch(part) else json.dumps(part) for part in key)


def parse_key(dotted: str) -> KeyPath:
    """The parts of a TOML dotted key: ``'a."b.c"'`` -> ``('a', 'b.c')``.

    The inverse of `format_key`; a string that is not a dotted key is a `ValueError`.
    """
    if not re.fullmatch(DOTTED_KEY_PATTERN, dotted.strip()):
        raise ValueError(f"not a TOML dotted key: {dotted!r}")
    parts: list[str] = []
    for match in _KEY_PART_RE.finditer(dotted):
        part = match.group()
        if part.startswith('"'):
            try:
                part = str(json.loads(part))
            except ValueError:
                part = part[1:-1]
        elif part.startswith("'"):
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)
