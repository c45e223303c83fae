"""A JSON Schema (draft 2020-12) of hub.toml, for editors (taplo / Even Better TOML).

Generated from the declarations the checker uses: the `ProviderConfig` dataclasses of the
settings tables (their fields' types, bounds, defaults and help), `LabgridConfig`, the
`SSHSection`, `ProjectSection` and `ClusterSection` dataclasses, the registered runtimes'
image names and component names. The rules that tie keys together (a settings table belongs to
its provider, ``ssh`` not on ``local`` or cloud providers, cloud providers need ``spec``)
become ``if``/``then`` clauses. What the checker refuses, the schema refuses too (the tests hold the
two to a list of cases); `hub` itself never reads the schema, it runs the checker.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, Literal

from edgehub.config.schema import (
    CLOUD_PROVIDERS,
    DEVICE_NAME_PATTERN,
    ClusterSection,
    ProjectSection,
    SSHSection,
)
from edgehub.config.settings import SettingsTable, provider_tables, settings_table
from edgehub.core.values import Matches, Range, split_annotated, union_members, without_none

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_TEXT = {"type": "string", "pattern": r"\S"}  # the checker refuses blank strings
_SCALARS = {bool: "boolean", int: "integer", float: "number"}
_PROJECT_HELP = {
    "name": "default: the directory holding hub.toml",
    "store": "run store",
    "quarantine_after": "failed health checks in a row that quarantine a board",
    "quarantine_cooldown": "seconds a quarantined board is passed over",
}
_CLUSTER_HELP = {
    "address": "the Ray cluster of `hub exec sweep --cluster`: "
    '"ray://HOST:PORT", "HOST:PORT", "auto" or "local:N"'
}


def hub_toml_schema() -> dict[str, Any]:
    """The schema of hub.toml, as JSON data (built-in and registered providers included)."""
    from edgehub.core.device.configs import LabgridConfig
    from edgehub.core.runtimes import all_runtimes

    runtimes = all_runtimes().values()
    tables = provider_tables(registered=True)
    images = [r.image for r in runtimes if r.image]
    components = sorted({c.__name__ for r in runtimes for c in r.components})
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "urn:edgehub:hub.toml",
        "title": "hub.toml",
        "description": "The configuration of an edgehub project.",
        "type": "object",
        "properties": {
            "project": _dataclass_schema(ProjectSection, _PROJECT_HELP, required=False),
            "images": _closed(
                {
                    "base": {**_TEXT, "description": "base image for `hub images build`"},
                    **{name: {**_TEXT, "description": f"{name} image tag"} for name in images},
                }
            ),
            "cluster": _dataclass_schema(ClusterSection, _CLUSTER_HELP),
            "devices": {
                "type": "object",
                "propertyNames": {"pattern": f"^{DEVICE_NAME_PATTERN}$"},
                "properties": {"local": {"$ref": "#/$defs/local_device"}},
                "additionalProperties": {"$ref": "#/$defs/device"},
            },
        },
        "additionalProperties": False,
        "$defs": {
            "device": _device(tables, components, default_provider=None),
            "local_device": _device(tables, components, default_provider="local"),
            "ssh": _dataclass_schema(SSHSection),
            "labgrid": _settings_schema(settings_table(LabgridConfig)),
            **{_table_def(t): _settings_schema(t) for t in tables.values()},
        },
    }


def _closed(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _table_def(table: SettingsTable) -> str:
    return f"settings_{table.table}"


def _device(
    tables: dict[str, SettingsTable], components: list[str], *, default_provider: str | None
) -> dict[str, Any]:
    refs = {t.table: {"$ref": f"#/$defs/{_table_def(t)}"} for t in tables.values()}
    override = {
        "type": "object",
        "minProperties": 1,
        "properties": refs,
        "additionalProperties": False,
    }
    device = _closed(
        {
            "provider": {
                **_TEXT,
                "description": "who runs the tools (any string; these are known)",
                "examples": list(dict.fromkeys([*tables, *CLOUD_PROVIDERS])),
            },
            "spec": {**_TEXT, "description": "the device's catalog name or description"},
            "ssh": {"$ref": "#/$defs/ssh"},
            "labgrid": {"$ref": "#/$defs/labgrid"},
            "overrides": {
                "type": "object",
                "propertyNames": {"anyOf": [{"enum": components}, {"pattern": r"\."}]},
                "additionalProperties": override,
            },
            **refs,
        }
    )
    rules: list[dict[str, Any]] = []
    for provider, table in tables.items():
        used = {
            "anyOf": [
                {"required": [table.table]},
                {"required": ["overrides"], "properties": {"overrides": _some_value_has(table)}},
            ]
        }
        owner: dict[str, Any] = {"properties": {"provider": {"const": provider}}}
        if provider != default_provider:
            owner["required"] = ["provider"]
        rules.append({"if": used, "then": owner})
    away = [*CLOUD_PROVIDERS, "local"]
    rules.append(
        {
            "if": {"required": ["ssh"]},
            "then": {
                "required": ["provider"] if default_provider in away else [],
                "properties": {"provider": {"not": {"enum": away}}},
            },
        }
    )
    cloud = {"required": ["provider"], "properties": {"provider": {"enum": list(CLOUD_PROVIDERS)}}}
    rules.append({"if": cloud, "then": {"required": ["spec"], "not": {"required": ["labgrid"]}}})
    device["allOf"] = rules
    return device


def _some_value_has(table: SettingsTable) -> dict[str, Any]:
    """Matches an ``overrides`` table where some component's table names ``table``."""
    return {"not": {"additionalProperties": {"not": {"required": [table.table]}}}}


def _settings_schema(table: SettingsTable) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for key in table.keys:
        schema = _value_schema(without_none(key.type))
        if key.help:
            schema["description"] = key.help
        default = getattr(table.config_type, key.field, None)  # a dataclass field's default
        if isinstance(default, (bool, int, float, str)):
            schema["default"] = default
        properties[key.key] = schema
    schema = _closed(properties)
    if table.help:
        schema["description"] = table.help
    return schema


def _dataclass_schema(
    cls: type[Any], descriptions: Mapping[str, str] | None = None, *, required: bool = True
) -> dict[str, Any]:
    """The table whose keys are ``cls``'s fields (described by ``descriptions``); with
    ``required``, a field without a default must be given."""
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    needed: list[str] = []
    for item in dataclasses.fields(cls):
        schema = _value_schema(without_none(hints[item.name]))
        if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            if required:
                needed.append(item.name)
        elif isinstance(item.default, (bool, int, float, str)):
            schema["default"] = item.default
        if descriptions and item.name in descriptions:
            schema["description"] = descriptions[item.name]
        properties[item.name] = schema
    return _closed(properties, needed)


def _value_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of a value of annotation ``tp`` (see `edgehub.core.values`); strings must
    not be blank. An annotation it does not know accepts anything (``{}``)."""
    tp, meta = split_annotated(tp)
    members = union_members(tp)
    if members is not None:
        options: list[dict[str, Any]] = []
        for member in members:
            schema = _value_schema(member)
            if schema not in options:
                options.append(schema)
        return options[0] if len(options) == 1 else {"anyOf": options}
    schema = _plain_schema(tp)
    for item in meta:
        if isinstance(item, Range):
            if item.low is not None:
                schema["exclusiveMinimum" if item.open_low else "minimum"] = item.low
            if item.high is not None:
                schema["maximum"] = item.high
        elif isinstance(item, Matches):
            schema["pattern"] = f"^(?:{_any_case(item.pattern)})$"
    return schema


def _plain_schema(tp: Any) -> dict[str, Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if tp is str or (isinstance(tp, type) and issubclass(tp, PurePath)):
        return dict(_TEXT)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [member.value for member in tp]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (tuple, list):
        if not args:
            return {"type": "array"}
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "items": _value_schema(args[0])}
        return {
            "type": "array",
            "prefixItems": [_value_schema(a) for a in args],
            "items": False,
            "minItems": len(args),
        }
    if origin is dict and len(args) == 2:
        return {"type": "object", "additionalProperties": _value_schema(args[1])}
    if origin is dict or tp is dict:
        return {"type": "object"}
    return {}


def _any_case(pattern: str) -> str:
    """``pattern`` matching letters in either case (`Matches` ignores case; JSON Schema's
    regular expressions take no flags): ``[bkmg]`` -> ``[bkmgBKMG]``, ``x`` -> ``[xX]``."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[":
            end = index + 1
            while end < len(pattern) and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            body = pattern[index + 1 : end]
            negated = body.startswith("^")
            plain = body[1:] if negated else body
            swapped = "" if "\\" in plain else plain.swapcase()
            extra = "" if sorted(swapped) == sorted(plain) else swapped
            out.append("[" + ("^" if negated else "") + plain + extra + "]")
            index = end + 1
            continue
        out.append(f"[{char}{char.swapcase()}]" if char.isalpha() else char)
        index += 1
    return "".join(out)
