"""Checking parsed hub.toml data against the schema, and building the typed `HubConfig`.

Each check raises `SchemaError` naming the offending key; `edgehub.config.load` adds the file
and line. See `edgehub.config.schema` for the format.
"""

from __future__ import annotations

import json
import math
import re
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgehub.config.schema import (
    CLOUD_PROVIDERS,
    DEVICE_NAME_PATTERN,
    ClusterSection,
    DeviceSection,
    HubConfig,
    ImagesSection,
    KeyPath,
    ProjectSection,
    SchemaError,
    SSHSection,
    format_key,
)
from edgehub.config.settings import ProviderSettings, SettingsTable, provider_tables, settings_table
from edgehub.core.device.configs import LabgridConfig
from edgehub.core.values import (
    Matches,
    Range,
    ValueProblem,
    from_data,
    split_annotated,
    without_none,
)
from edgehub.errors import did_you_mean

_DEVICE_FIXED_KEYS = ("provider", "spec", "ssh", "overrides", "labgrid")
_SECRET_KEYS = ("password", "passphrase", "token", "api_token", "api_key", "secret")

# --- checking parsed TOML -------------------------------------------------------------------


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        text = json.dumps(value, default=str)
        return text if len(text) <= 40 else "an array"
    return str(value)


def _suggest(word: str, choices: Sequence[str], otherwise: str | None = None) -> str:
    """``; did you mean ...?`` for a close choice, else ``otherwise`` (default: the choices)."""
    if otherwise is None:
        otherwise = f"; valid: {', '.join(choices)}" if choices else ""
    return did_you_mean(word, choices) or otherwise


class _Table:
    """Checked, typed access to one TOML table at ``key``; unknown keys are refused."""

    def __init__(self, data: object, key: KeyPath, allowed: Sequence[str]) -> None:
        self.data = _mapping(data, key)
        self.key = key
        for name in self.data:
            if name in allowed:
                continue
            full = (*key, name)
            if name.lower() in _SECRET_KEYS:
                raise SchemaError(full, _secret_message(key, name))
            raise SchemaError(full, f"unknown key {format_key(full)!r}{_suggest(name, allowed)}")

    def wrong(self, name: str, expected: str, value: object, hint: str = "") -> SchemaError:
        full = (*self.key, name)
        return SchemaError(full, f"{format_key(full)} must be {expected}, got {_show(value)}{hint}")

    def required(self, name: str) -> str:
        value = self.string(name)
        if value is None:
            raise SchemaError(self.key, f"[{format_key(self.key)}] needs {name!r}")
        return value

    def string(self, name: str) -> str | None:
        value = self.data.get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.wrong(name, "a non-empty string", value)
        return value

    def integer(self, name: str, low: int, high: int) -> int | None:
        value = self.data.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.wrong(name, "an integer", value)
        if not low <= value <= high:
            raise self.wrong(name, f"between {low} and {high}", value)
        return value

    def number(self, name: str, *, positive: bool) -> float | None:
        value = self.data.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.wrong(name, "a number", value)
        if not math.isfinite(value):
            raise self.wrong(name, "a finite number", value)
        if value < 0 or (positive and value == 0):
            raise self.wrong(name, "greater than 0" if positive else "0 or more", value)
        return float(value)


def _mapping(data: object, key: KeyPath) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise SchemaError(key, f"{format_key(key)} must be a table, got {_show(data)}")
    return data


def _secret_message(table: KeyPath, name: str) -> str:
    full = format_key((*table, name))
    if table[-1:] == ("ssh",) and name.lower() in ("password", "passphrase"):
        return (
            f"{full}: passwords are never stored in hub.toml; use a key file "
            f'(key = "~/.ssh/id_ed25519") or the SSH agent, or name an environment variable '
            f'that holds it (password_env = "EDGEHUB_SSH_PASSWORD_MYDEVICE")'
        )
    return f"{full}: secrets are never stored in hub.toml; set them in the environment instead"


def build_config(data: Mapping[str, Any], *, path: Path | None, root: Path) -> HubConfig:
    """Check parsed TOML against the schema and build the typed config.

    Raises `SchemaError` (a `ConfigError` whose ``key`` names the offending key) on the first
    problem found. Adds the implicit ``local`` device when none is declared.
    """
    top = _Table(data, (), ("project", "images", "cluster", "devices"))
    project = _project(top.data.get("project", {}), root)
    images = _images(top.data.get("images", {}))
    raw_devices = _mapping(top.data.get("devices", {}), ("devices",))
    devices = {name: _device(name, table) for name, table in raw_devices.items()}
    if "local" not in devices:
        docker = provider_tables()["local"].config_type
        devices["local"] = DeviceSection(
            name="local", provider="local", settings=ProviderSettings(docker), implicit=True
        )
    cluster = ClusterSection(**_fields(top.data.get("cluster", {}), ("cluster",), ClusterSection))
    return HubConfig(
        path=path, project=project, images=images, devices=devices, root=root, cluster=cluster
    )


def _project(data: object, root: Path) -> ProjectSection:
    given = _fields(data, ("project",), ProjectSection)
    return ProjectSection(**{"name": root.name or "edgehub", **given})


def _images(data: object) -> ImagesSection:
    names: list[str] = []
    if isinstance(data, Mapping) and set(data) - {"base"}:
        from edgehub.core.runtimes import all_runtimes

        names = [r.image for r in all_runtimes().values() if r.image]
    table = _Table(data, ("images",), ("base", *names))
    tags = {image: tag for image in names if (tag := table.string(image)) is not None}
    return ImagesSection(base=table.string("base"), tags=tags)


def _tables_for(data: object) -> dict[str, SettingsTable]:
    """Settings tables by provider for one device table: the built-in ones, plus the registered
    runtimes' when the device names a provider or a table the built-ins do not know."""
    raw: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    provider = raw.get("provider")
    keys = set(raw)
    overrides = raw.get("overrides")
    if isinstance(overrides, Mapping):
        keys.update(k for inner in overrides.values() if isinstance(inner, Mapping) for k in inner)
    tables = provider_tables()
    known = {*_DEVICE_FIXED_KEYS, *(t.table for t in tables.values())}
    builtin = not isinstance(provider, str) or provider in tables or provider in CLOUD_PROVIDERS
    if builtin and keys <= known:
        return tables
    return provider_tables(registered=True)


def _device(name: str, data: object) -> DeviceSection:
    key: KeyPath = ("devices", name)
    check_device_name(name)
    tables = _tables_for(data)
    by_table = {t.table: t for t in tables.values()}
    table = _Table(data, key, (*_DEVICE_FIXED_KEYS, *by_table))
    provider = table.string("provider")
    if provider is None and name == "local":
        provider = "local"
    spec = table.string("spec")
    own = tables.get(provider or "")
    for settings in by_table:
        if settings in table.data and (own is None or settings != own.table):
            raise SchemaError((*key, settings), _misplaced(key, settings, provider, tables))
    ssh = _ssh(table.data["ssh"], (*key, "ssh")) if "ssh" in table.data else None
    if ssh is not None and (provider == "local" or provider in CLOUD_PROVIDERS):
        where = "on this host" if provider == "local" else "in the cloud"
        raise SchemaError(
            (*key, "ssh"),
            f"[{format_key((*key, 'ssh'))}] does not apply to provider {provider!r}, which runs "
            f"{where}; remove it or change the provider",
        )
    if provider in CLOUD_PROVIDERS and spec is None:
        raise SchemaError(
            key, f'[{format_key(key)}] needs spec = "<catalog device name>" for {provider!r}'
        )
    labgrid = None
    if "labgrid" in table.data:
        if provider in CLOUD_PROVIDERS:
            raise SchemaError((*key, "labgrid"), f"a labgrid place cannot serve {provider!r}")
        labgrid = _settings(settings_table(LabgridConfig), table.data["labgrid"], (*key, "labgrid"))
    own_settings = None
    if own is not None:
        own_settings = _settings(own, table.data.get(own.table, {}), (*key, own.table))
    return DeviceSection(
        name=name,
        provider=provider,
        spec=spec,
        ssh=ssh,
        settings=own_settings,
        labgrid=labgrid,
        overrides=_overrides(table.data.get("overrides"), (*key, "overrides"), provider, tables),
    )


def check_device_name(name: str) -> None:
    if not re.fullmatch(DEVICE_NAME_PATTERN, name):
        raise SchemaError(
            ("devices", name),
            f"device name {name!r} is not allowed: use letters, digits, '_' and '-', "
            "starting with a letter or digit",
        )


def _misplaced(
    device: KeyPath, settings: str, provider: str | None, tables: Mapping[str, SettingsTable]
) -> str:
    header = f"[{format_key((*device, settings))}]"
    owner = next(name for name, table in tables.items() if table.table == settings)
    own = tables.get(provider or "")
    expected = own.table if own is not None else None
    if provider is None:
        return f'{header} holds settings of provider {owner!r}; add provider = "{owner}"'
    if expected is None:
        return (
            f"{header} does not apply to provider {provider!r}, which takes no settings "
            "table in hub.toml"
        )
    return (
        f"{header} does not apply to provider {provider!r}; its settings go in "
        f"[{format_key((*device, expected))}]"
    )


def _ssh(data: object, key: KeyPath) -> SSHSection:
    return SSHSection(**_fields(data, key, SSHSection, required=("host", "user")))


def _fields(
    data: object, key: KeyPath, section: type, required: Sequence[str] = ()
) -> dict[str, Any]:
    """The values the table ``data`` at ``key`` gives for the fields of dataclass ``section``
    (its keys), each checked as its annotation declares: an integer or a number within its
    `Range`, else a string (of its `Matches`); the ``required`` ones must be given."""
    hints = typing.get_type_hints(section, include_extras=True)
    table = _Table(data, key, tuple(hints))
    values: dict[str, Any] = {}
    for name, hint in hints.items():
        tp, meta = split_annotated(without_none(hint))
        bound = next((item for item in meta if isinstance(item, Range)), Range(0))
        value: Any
        if tp is int:
            assert bound.low is not None and bound.high is not None
            value = table.integer(name, int(bound.low), int(bound.high))
        elif tp is float:
            value = table.number(name, positive=bound.open_low)
        else:
            value = table.required(name) if name in required else table.string(name)
        for item in meta:
            if isinstance(item, Matches) and value is not None and not item.holds(value):
                raise table.wrong(name, item.description, value)
        if value is not None:
            values[name] = value
    return values


def _settings(schema: SettingsTable, data: object, key: KeyPath) -> ProviderSettings:
    table = _Table(data, key, [k.key for k in schema.keys])
    values: dict[str, Any] = {}
    for entry in schema.keys:
        if entry.key not in table.data:
            continue
        value = table.data[entry.key]
        if isinstance(value, str) and not value.strip():
            raise table.wrong(entry.key, "a non-empty string", value)
        try:
            values[entry.field] = from_data(value, without_none(entry.type))
        except ValueProblem as problem:
            hint = ""
            if isinstance(value, str) and problem.expected.startswith("an array"):
                hint = f" (write [{json.dumps(value)}])"
            raise table.wrong(entry.key, problem.expected, value, hint) from None
    return ProviderSettings(schema.config_type, values)


def _overrides(
    data: object, key: KeyPath, provider: str | None, tables: Mapping[str, SettingsTable]
) -> dict[str, ProviderSettings]:
    if data is None:
        return {}
    own = tables.get(provider or "")
    result: dict[str, ProviderSettings] = {}
    for component, inner in _mapping(data, key).items():
        ckey = (*key, component)
        if "." not in component:
            _check_component(component, ckey, key)
        table = _Table(inner, ckey, [t.table for t in tables.values()])
        if not table.data:
            raise SchemaError(ckey, f"[{format_key(ckey)}] names no settings table")
        for settings, value in table.data.items():
            if own is None or settings != own.table:
                raise SchemaError((*ckey, settings), _misplaced(ckey, settings, provider, tables))
            result[component] = _settings(own, value, (*ckey, settings))
    return result


def _check_component(component: str, ckey: KeyPath, key: KeyPath) -> None:
    from edgehub.core.runtimes import all_runtimes

    known = [c.__name__ for r in all_runtimes().values() for c in r.components]
    if component in known:
        return
    hint = _suggest(
        component,
        known,
        f"; known: {', '.join(known)} (name your own components by their qualified name "
        'in quotes: "mypkg.module.MyCompiler")',
    )
    raise SchemaError(ckey, f"unknown component {component!r} in {format_key(key)}{hint}")
