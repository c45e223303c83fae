"""Turning the ``[devices]`` of a `HubConfig` into `Device` objects.

- ``local`` provider: a `LocalCommandRunner` and a `DockerConfig` (limits from ``docker``).
- ``qai_hub`` / ``aws``: no runner; ``spec`` is the catalog device name.
- a device with ``ssh``: an `SSHCommandRunner` (built here, connected only when used); ``~`` and
  paths relative to hub.toml are resolved in ``key`` and ``known_hosts``; the password, if any,
  is read from the variable ``password_env`` names.
- any other device: a `LocalCommandRunner` (the provider's tool runs on this host).
- ``embedl_onnxruntime`` / ``trtexec``: their typed configs (defaults when the table is absent).
- overrides: keyed by the component class that ``component_lookup`` returns for each name; each
  override starts from the device's settings.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from edgehub.config.schema import (
    DeviceSection,
    DockerSection,
    EmbedlONNXRuntimeSection,
    HubConfig,
    ProviderSection,
    SSHSection,
    TrtexecSection,
)
from edgehub.core.device.configs import DockerConfig, EmbedlONNXRuntimeConfig, TrtexecConfig
from edgehub.core.device.runner import CommandRunner
from edgehub.core.device.spec import Device, DeviceSpec, ProviderConfig
from edgehub.errors import ConfigError, DeviceError
from edgehub.runners.local import LocalCommandRunner

__all__ = ["ComponentLookup", "default_component_lookup", "to_device", "to_devices"]

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

    ``environ`` (default `os.environ`) supplies SSH passwords named by ``password_env``.
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
        overrides[cls] = _provider_config(config, _merge(base, override), local=local)
    return Device(
        name=section.name,
        runner=_runner(config, section, environ),
        spec=DeviceSpec(device_name=section.spec),
        provider_type=section.provider,
        provider_config=_default_config(config, section, local=local),
        provider_config_overrides=overrides,
    )


def _runner(
    config: HubConfig, section: DeviceSection, environ: Mapping[str, str] | None
) -> CommandRunner | None:
    if section.provider in ("qai_hub", "aws"):
        return None
    if section.ssh is None:
        return LocalCommandRunner()
    return _ssh_runner(config, section.name, section.ssh, environ)


def _ssh_runner(
    config: HubConfig, name: str, ssh: SSHSection, environ: Mapping[str, str] | None
) -> CommandRunner:
    from edgehub.runners.ssh import SSHCommandRunner, SSHConfig

    password = None
    if ssh.password_env is not None:
        password = (os.environ if environ is None else environ).get(ssh.password_env)
        if password is None:
            where = config.where(("devices", name, "ssh", "password_env"))
            raise ConfigError(
                f"{where}: devices.{name}.ssh.password_env names {ssh.password_env}, which is not "
                f"set; export {ssh.password_env}=... or use a key file"
            )
    runner: CommandRunner = SSHCommandRunner(
        SSHConfig(
            host=ssh.host,
            username=ssh.user,
            port=ssh.port,
            password=password,
            private_key_path=_local_path(config, ssh.key),
            known_hosts=_local_path(config, ssh.known_hosts),
            connect_timeout=ssh.connect_timeout,
            keepalive_s=ssh.keepalive,
        )
    )
    return runner


def _local_path(config: HubConfig, raw: str | None) -> Path | None:
    if raw is None:
        return None
    path = Path(raw).expanduser()
    return path if path.is_absolute() else config.root / path


def _tool_path(config: HubConfig, raw: str | None, default: str, *, local: bool) -> str:
    """A tool path as the provider should run it: remote paths verbatim; on this host ``~`` and
    relative paths (with a ``/``) are resolved, bare names are left to ``PATH``."""
    if raw is None:
        return default
    if not local or ("/" not in raw and not raw.startswith("~")):
        return raw
    return str(_local_path(config, raw))


def _default_config(
    config: HubConfig, section: DeviceSection, *, local: bool
) -> ProviderConfig | None:
    if section.provider == "local":
        return _provider_config(config, section.docker or DockerSection(), local=True)
    if section.provider == "embedl_onnxruntime":
        return _provider_config(
            config, section.embedl_onnxruntime or EmbedlONNXRuntimeSection(), local=local
        )
    if section.provider == "trtexec":
        return _provider_config(config, section.trtexec or TrtexecSection(), local=local)
    return None


def _provider_config(config: HubConfig, section: ProviderSection, *, local: bool) -> ProviderConfig:
    if isinstance(section, DockerSection):
        return DockerConfig(
            cpus=section.cpus,
            memory=section.memory,
            image=section.image,
            keep_warm=section.keep_warm,
        )
    if isinstance(section, EmbedlONNXRuntimeSection):
        return EmbedlONNXRuntimeConfig(
            embedl_onnxruntime_path=_tool_path(
                config, section.path, "embedl-onnxruntime", local=local
            ),
            cli_args=section.cli_args or (),
        )
    return TrtexecConfig(
        trtexec_path=_tool_path(config, section.path, "trtexec", local=local),
        trtexec_cli_args=section.cli_args or (),
    )


def _merge(base: ProviderSection | None, override: ProviderSection) -> ProviderSection:
    """``override`` with the keys it leaves unset taken from ``base`` (same type only)."""
    if base is None or type(base) is not type(override):
        return override
    values = {
        name: getattr(override, name) if getattr(override, name) is not None else value
        for name, value in vars(base).items()
    }
    merged: ProviderSection = type(override)(**values)
    return merged


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
