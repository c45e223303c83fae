"""What the user, not a project, vouches for when edgehub logs in to an SSH device.

A hub.toml travels with a repository, so it is data: it may say where a device is, never on its
own which secret leaves this machine or which file vouches for a host key.

- ``password_env``: the variable must be one the user allowed: a name starting with
  ``EDGEHUB_SSH_PASSWORD`` (only ever given for this), one listed in ``$EDGEHUB_PASSWORD_ENVS``
  (comma-separated), or one listed in ``password_envs`` of the user's ``trust.toml`` (in
  `edgehub.paths.user_config_dir`).
- ``known_hosts``: a file inside the project (the git work tree holding hub.toml, else hub.toml's
  folder; symlinks resolved) vouches only when listed in ``$EDGEHUB_KNOWN_HOSTS``
  (``os.pathsep``-separated) or in ``known_hosts`` of ``trust.toml``. Files outside the project
  or under ``~/.ssh`` (a lab's shared file, ``~/.ssh/known_hosts``) are the user's own.

A refusal is one line naming the setting and how to allow it; the device's runner raises it
before it opens any connection (`edgehub.runners.ssh.SSHConfig.unusable`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from edgehub.config.schema import HubConfig, SSHSection
from edgehub.errors import ConfigError
from edgehub.paths import user_config_dir

PASSWORD_PREFIX = "EDGEHUB_SSH_PASSWORD"
PASSWORD_ENVS_VAR = "EDGEHUB_PASSWORD_ENVS"
KNOWN_HOSTS_VAR = "EDGEHUB_KNOWN_HOSTS"


@dataclass(frozen=True)
class UserTrust:
    """The variables and known_hosts files the user allowed (from the environment and
    ``trust.toml``)."""

    password_envs: frozenset[str]
    known_hosts: frozenset[Path]


def trust_file() -> Path:
    """The user's ``trust.toml``: ``~/.config/edgehub/trust.toml`` (``$XDG_CONFIG_HOME``)."""
    return user_config_dir() / "trust.toml"


def user_trust(environ: Mapping[str, str] | None = None) -> UserTrust:
    """What the user allowed; a malformed ``trust.toml`` is a `ConfigError` naming it."""
    env = os.environ if environ is None else environ
    names = {n.strip() for n in env.get(PASSWORD_ENVS_VAR, "").split(",") if n.strip()}
    files = {_resolved(p) for p in env.get(KNOWN_HOSTS_VAR, "").split(os.pathsep) if p.strip()}
    path = trust_file()
    if path.is_file():
        data = _read(path)
        unknown = sorted(set(data) - {"password_envs", "known_hosts"})
        if unknown:
            raise ConfigError(
                f"{path}: unknown key {unknown[0]!r}; it takes password_envs and known_hosts"
            )
        names.update(_strings(data, "password_envs", path))
        files.update(_resolved(p) for p in _strings(data, "known_hosts", path))
    return UserTrust(password_envs=frozenset(names), known_hosts=frozenset(files))


def project_tree(root: Path) -> Path:
    """The folder a cloned project's files may lie in: the git work tree holding ``root``
    (a home folder kept in git does not count), else ``root``."""
    root = root.resolve()
    home = Path.home().resolve()
    for folder in (root, *root.parents):
        if folder == home or folder in home.parents:
            break
        if (folder / ".git").exists():
            return folder
    return root


def password_env_refusal(
    config: HubConfig, name: str, ssh: SSHSection, environ: Mapping[str, str] | None = None
) -> str | None:
    """Why device ``name``'s ``password_env`` may not be read; None when the user allowed it."""
    variable = ssh.password_env
    if variable is None or variable.startswith(PASSWORD_PREFIX):
        return None
    try:
        if variable in user_trust(environ).password_envs:
            return None
    except ConfigError as error:
        return str(error)
    where = config.where(("devices", name, "ssh", "password_env"))
    return (
        f"{where}: devices.{name}.ssh.password_env names {variable}, which you have not allowed "
        f"as a device password (a project's hub.toml cannot choose a secret to send); allow it "
        f"with {PASSWORD_ENVS_VAR}={variable} or password_envs in {trust_file()}, or name a "
        f"variable {PASSWORD_PREFIX}_*"
    )


def known_hosts_refusal(
    config: HubConfig, name: str, ssh: SSHSection, environ: Mapping[str, str] | None = None
) -> str | None:
    """Why device ``name``'s ``known_hosts`` file may not vouch for its host; None when it is
    outside the project or the user allowed it."""
    if ssh.known_hosts is None:
        return None
    raw = Path(ssh.known_hosts).expanduser()
    path = _resolved(raw if raw.is_absolute() else config.root / raw)
    tree = project_tree(config.root)
    if not path.is_relative_to(tree) or path.is_relative_to(_resolved(Path.home() / ".ssh")):
        return None
    try:
        if path in user_trust(environ).known_hosts:
            return None
    except ConfigError as error:
        return str(error)
    where = config.where(("devices", name, "ssh", "known_hosts"))
    return (
        f"{where}: devices.{name}.ssh.known_hosts names {path}, a file inside the project "
        f"({tree}), which does not vouch for a host on its own; trust the host in "
        f"~/.ssh/known_hosts instead, or allow the file with {KNOWN_HOSTS_VAR}={path} or "
        f"known_hosts in {trust_file()}"
    )


def _resolved(raw: str | Path) -> Path:
    return Path(raw).expanduser().resolve()


def _read(path: Path) -> Mapping[str, object]:
    from edgehub.config.load import parse_toml

    try:
        return parse_toml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:  # TOMLDecodeError is a ValueError
        raise ConfigError(f"cannot read {path}: {error}; fix or remove it") from error


def _strings(data: Mapping[str, object], key: str, path: Path) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: {key} must be an array of strings; fix it there")
    return list(value)
