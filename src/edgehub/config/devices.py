"""Turning the ``[devices]`` of a `HubConfig` into `Device` objects.

- ``local`` provider: a `LocalCommandRunner` and a `DockerConfig` (limits from ``docker``).
- ``qai_hub`` / ``aws``: no runner; ``spec`` is the catalog device name.
- a device with ``ssh``: an `SSHCommandRunner` (built here, connected only when used); ``~`` and
  paths relative to hub.toml are resolved in ``key`` and ``known_hosts``; the password, if any,
  is read from the variable ``password_env`` names. Neither that variable nor a ``known_hosts``
  file inside the project is used unless the user allowed it (`edgehub.config.user_trust`):
  otherwise the runner refuses on first use, before connecting.
- any other device: a `LocalCommandRunner` (the provider's tool runs on this host).
- every provider with a settings table (``docker``, ``embedl_onnxruntime``, ``trtexec``, a
  runtime's own): its `ProviderConfig` dataclass built from the table (defaults when absent);
  fields marked ``tool_path`` are resolved against hub.toml when the tool runs on this host,
  ``host_file`` fields always.
- overrides: keyed by the component class that ``component_lookup`` returns for each name; each
  override starts from the device's settings.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from edgehub.config.schema import CLOUD_PROVIDERS, DeviceSection, HubConfig, SSHSection
from edgehub.config.settings import ProviderSettings, settings_table
from edgehub.config.user_trust import known_hosts_refusal, password_env_refusal
from edgehub.core.device.spec import Device, DeviceSpec, ProviderConfig
from edgehub.errors import ConfigError, DeviceError
from edgehub.runners.local import LocalCommandRunner
from edgehub.runners.protocol import CommandRunner

ComponentLookup = Callable[[str], type]


def default_component_lookup(name: str) -> type[Any]:
    """The component class for an override name.

    A bare name (``ONNXRuntimeProfiler``) is looked up in the component registry; a qualified
    name (``mypkg.components.MyCompiler``) is imported.
    """
    if "." in name:
        module_name, _, attribute = name.rpartition(".")
        found = getattr(importlib.import_module(module_name), attribute)
    else:
        registry = importlib.import_module("edgehub.core.component.registry")
        found = registry.component_class(name)
    if not isinstance(found, type):
        raise TypeError(f"{name} is not a class")
    return found


def to_devices(
    config: HubConfig,
    *,
    component_lookup: ComponentLookup | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Device]:
    """A `Device` for every device in ``config``, in file order (the implicit ``local`` last).

    ``environ`` (default `os.environ`) supplies SSH passwords named by ``password_env`` and
    the user's allow-lists (`edgehub.config.user_trust`).
    """
    return [
        _device(config, section, component_lookup, environ) for section in config.devices.values()
    ]


def to_device(
    config: HubConfig,
    name: str,
    *,
    component_lookup: ComponentLookup | None = None,
    environ: Mapping[str, str] | None = None,
) -> Device:
    """The `Device` called ``name``; an unknown name is a `DeviceError` listing the known ones."""
    section = config.devices.get(name)
    if section is None:
        known = ", ".join(config.devices)
        source = config.path or "the default config"
        raise DeviceError(f"device {name!r} is not in {source}; known: {known}")
    return _device(config, section, component_lookup, environ)


def _device(
    config: HubConfig,
    section: DeviceSection,
    lookup: ComponentLookup | None,
    environ: Mapping[str, str] | None,
) -> Device:
    key = ("devices", section.name)
    local = section.ssh is None
    base = section.settings
    overrides: dict[type[Any], ProviderConfig] = {}
    for component, override in section.overrides.items():
        cls = _component(config, (*key, "overrides", component), component, lookup)
        merged = base.merged(override) if base is not None else override
        overrides[cls] = _provider_config(config, merged, local=local)
    return Device(
        name=section.name,
        runner=_runner(config, section, environ),
        spec=DeviceSpec(device_name=section.spec),
        provider_type=section.provider,
        provider_config=_provider_config(config, base, local=local) if base else None,
        provider_config_overrides=overrides,
    )


def _runner(
    config: HubConfig, section: DeviceSection, environ: Mapping[str, str] | None
) -> CommandRunner | None:
    if section.provider in CLOUD_PROVIDERS:
        return None
    if section.ssh is None:
        return LocalCommandRunner()
    return _ssh_runner(config, section.name, section.ssh, environ)


def _ssh_runner(
    config: HubConfig, name: str, ssh: SSHSection, environ: Mapping[str, str] | None
) -> CommandRunner:
    from edgehub.runners.ssh import SSHCommandRunner, SSHConfig

    password = None
    unusable = password_env_refusal(config, name, ssh, environ) or known_hosts_refusal(
        config, name, ssh, environ
    )
    if ssh.password_env is not None and unusable is None:
        password = (os.environ if environ is None else environ).get(ssh.password_env)
        if password is None:  # only this device fails, and only when it is used
            where = config.where(("devices", name, "ssh", "password_env"))
            unusable = (
                f"{where}: devices.{name}.ssh.password_env names {ssh.password_env}, which is not "
                f"set; export {ssh.password_env}=... or use a key file"
            )
    return SSHCommandRunner(
        SSHConfig(
            host=ssh.host,
            username=ssh.user,
            port=ssh.port,
            password=password,
            private_key_path=_local_path(config, ssh.key),
            known_hosts=_local_path(config, ssh.known_hosts),
            connect_timeout=ssh.connect_timeout,
            keepalive_s=ssh.keepalive,
            keepalive_count=ssh.keepalive_count,
            step_timeout=ssh.step_timeout or None,
            jump_host=ssh.jump_host,
            unusable=unusable,
        )
    )


def _local_path(config: HubConfig, raw: str | None) -> Path | None:
    if raw is None:
        return None
    path = Path(raw).expanduser()
    return path if path.is_absolute() else config.root / path


def _tool_path(config: HubConfig, raw: str, *, local: bool) -> str:
    """A tool path as the provider should run it: remote paths verbatim; on this host ``~`` and
    relative paths (with a ``/``) are resolved, bare names are left to ``PATH``."""
    if not local or ("/" not in raw and not raw.startswith("~")):
        return raw
    return str(_local_path(config, raw))


def _provider_config(
    config: HubConfig, settings: ProviderSettings, *, local: bool
) -> ProviderConfig:
    """The settings' config dataclass, from the keys the file gave (its defaults for the rest)."""
    values = dict(settings.values)
    for entry in settings_table(settings.config_type).keys:
        if entry.tool_path and isinstance(values.get(entry.field), str):
            values[entry.field] = _tool_path(config, values[entry.field], local=local)
        elif entry.host_file and values.get(entry.field) and isinstance(values[entry.field], str):
            values[entry.field] = str(_local_path(config, values[entry.field]))
    return settings.config_type(**values)


def _component(
    config: HubConfig, key: tuple[str, ...], name: str, lookup: ComponentLookup | None
) -> type[Any]:
    try:
        return (lookup or default_component_lookup)(name)
    except KeyError as error:
        reason = str(error.args[0]) if error.args else f"unknown component {name!r}"
    except (ImportError, AttributeError, TypeError, ValueError) as error:
        reason = f"cannot load component {name!r}: {error}"
    raise ConfigError(f"{config.where(key)}: {reason}")
