"""Provider settings tables of hub.toml, derived from the `ProviderConfig` dataclasses.

A provider config dataclass is the single source of its table: ``provider_type`` (class
attribute) is the provider it serves, ``settings_table`` the table's name (default: the
provider type), and each field a key: named by ``metadata["toml"]`` (default: the field name),
typed, bounded and defaulted by the field, explained by ``metadata["help"]`` (the class
docstring explains the table). ``metadata["tool_path"]`` marks a command path that is resolved
against hub.toml when the device runs it on this host; ``metadata["host_file"]`` a file on this
host, always resolved against hub.toml (never looked up on ``PATH``).

The built-in configs are always known; the `provider_configs` of the registered runtimes are
added when a hub.toml names a provider or table the built-ins do not have (so that reading a
plain hub.toml loads no toolchain).
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgehub.core.device.configs import DockerConfig, EmbedlONNXRuntimeConfig, TrtexecConfig
from edgehub.core.device.spec import ProviderConfig
from edgehub.core.values import resolve

BUILTIN_CONFIGS: tuple[type[ProviderConfig], ...] = (
    DockerConfig,
    EmbedlONNXRuntimeConfig,
    TrtexecConfig,
)


@dataclass(frozen=True)
class SettingsKey:
    """One key of a settings table: its name in hub.toml and the dataclass field it sets."""

    key: str
    field: str
    type: Any
    help: str = ""
    tool_path: bool = False
    host_file: bool = False


@dataclass(frozen=True)
class SettingsTable:
    """The settings table of one provider: ``[devices.<name>.<table>]``."""

    provider: str
    table: str
    config_type: type[ProviderConfig]
    keys: tuple[SettingsKey, ...]
    help: str = ""


@dataclass(frozen=True)
class ProviderSettings:
    """What a device's settings table (or an override of it) sets: ``values`` by field name,
    only the keys the file gives. The config's defaults fill the rest."""

    config_type: type[ProviderConfig]
    values: Mapping[str, Any] = field(default_factory=dict)

    def merged(self, override: ProviderSettings) -> ProviderSettings:
        """``override`` with the keys it leaves out taken from these settings (same type)."""
        if override.config_type is not self.config_type:
            return override
        return ProviderSettings(self.config_type, {**self.values, **override.values})


_TABLES: dict[type[ProviderConfig], SettingsTable] = {}


def settings_table(config_type: type[ProviderConfig]) -> SettingsTable:
    """The table ``config_type`` describes; a `TypeError` when it is not a dataclass or does not
    name its ``provider_type``."""
    found = _TABLES.get(config_type)
    if found is None:
        found = _TABLES[config_type] = _derive(config_type)
    return found


def _derive(config_type: type[ProviderConfig]) -> SettingsTable:
    provider = getattr(config_type, "provider_type", None)
    if not dataclasses.is_dataclass(config_type) or not isinstance(provider, str):
        raise TypeError(
            f"{config_type.__name__} needs @dataclass and a provider_type class attribute to "
            "have a settings table in hub.toml"
        )
    namespace = vars(sys.modules.get(config_type.__module__, typing))
    keys = tuple(
        SettingsKey(
            key=str(f.metadata.get("toml", f.name)),
            field=f.name,
            type=resolve(f.type, namespace),
            help=str(f.metadata.get("help", "")),
            tool_path=bool(f.metadata.get("tool_path", False)),
            host_file=bool(f.metadata.get("host_file", False)),
        )
        for f in dataclasses.fields(config_type)
        if f.init
    )
    table = getattr(config_type, "settings_table", None) or provider
    doc = (config_type.__doc__ or "").strip().split("\n\n")[0]
    return SettingsTable(provider, str(table), config_type, keys, " ".join(doc.split()))


def provider_tables(*, registered: bool = False) -> dict[str, SettingsTable]:
    """Settings tables by provider type: the built-in ones, plus (``registered``) those of the
    registered runtimes' ``provider_configs``. A config that cannot describe a table is skipped
    with a one-line warning."""
    configs = list(BUILTIN_CONFIGS)
    if registered:
        from edgehub.core.runtimes import all_runtimes

        for runtime in all_runtimes().values():
            configs.extend(c for c in runtime.provider_configs if c not in configs)
    tables: dict[str, SettingsTable] = {}
    for config_type in configs:
        try:
            table = settings_table(config_type)
        except TypeError as error:
            print(f"edgehub: warning: {error}; its hub.toml table is ignored", file=sys.stderr)
            continue
        tables.setdefault(table.provider, table)
    return tables
