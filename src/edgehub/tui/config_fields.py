"""The fields of hub.toml's device tables, read from the config schema's dataclasses, and the
fields of a component's options, read from its ``run`` signature. Forms are generated from
these, so a new provider settings table or component option appears without TUI changes.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any

from edgehub.config.schema import CLOUD_PROVIDERS, SSHSection
from edgehub.config.settings import SettingsTable, provider_tables
from edgehub.core.component.options import OptionSpec
from edgehub.core.component.provider_type import ProviderType
from edgehub.core.values import split_annotated, without_none


@dataclass(frozen=True)
class FieldSpec:
    """One form field: ``kind`` is text, int, float, bool, list (of strings) or choice."""

    key: str
    kind: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.key.replace("_", " ")


def _kind(hint: Any) -> str:
    hint, _ = split_annotated(without_none(hint))  # `Annotated[float, ...] | None`: float
    if typing.get_origin(hint) is tuple or hint is tuple:
        return "list"
    if isinstance(hint, type) and issubclass(hint, bool):
        return "bool"
    if hint is int:
        return "int"
    if hint is float:
        return "float"
    return "text"


def ssh_fields() -> list[FieldSpec]:
    """The fields of `SSHSection`."""
    hints = typing.get_type_hints(SSHSection)
    fields = []
    for field in dataclasses.fields(SSHSection):
        missing = (
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        )
        default = None if field.default is dataclasses.MISSING else field.default
        fields.append(FieldSpec(field.name, _kind(hints[field.name]), missing, default))
    return fields


def _tables() -> dict[str, SettingsTable]:
    return provider_tables(registered=True)


def settings_table(provider: str | None) -> str | None:
    """The name of the settings table of ``provider`` (``docker`` for local), if it has one."""
    table = _tables().get(provider or "")
    return table.table if table is not None else None


def settings_fields(provider: str | None) -> list[FieldSpec]:
    """The fields of ``provider``'s settings table (none for providers without one), from
    the provider config dataclass that defines the table."""
    table = _tables().get(provider or "")
    if table is None:
        return []
    config = table.config_type  # a dataclass: a field's plain default is a class attribute
    return [
        FieldSpec(k.key, _kind(k.type), False, getattr(config, k.field, None)) for k in table.keys
    ]


def provider_choices(extra: str | None = None) -> list[str]:
    """Every provider type edgehub knows (and ``extra``, a custom one from the file)."""
    known = [str(p.value) for p in ProviderType]
    known += [p for p in (*_tables(), *CLOUD_PROVIDERS) if p not in known]
    if extra and extra not in known:
        known.append(extra)
    return known


def takes_ssh(provider: str | None) -> bool:
    return provider not in ("local", *CLOUD_PROVIDERS)


def component_names() -> list[str]:
    """Components an override can name: those of the available registered runtimes."""
    from edgehub.core.runtimes import all_runtimes

    runtimes = [r for r in all_runtimes().values() if r.available]
    return list(dict.fromkeys(c.__name__ for r in runtimes for c in r.components))


def option_fields(options: dict[str, OptionSpec]) -> list[FieldSpec]:
    """Form fields for a component's options, typed by their declaration (lists, paths and
    shapes are text, read by the option's type as ``--set`` reads them)."""
    fields = []
    for key, spec in options.items():
        default = spec.default.value if isinstance(spec.default, Enum) else spec.default
        kind = spec.kind if spec.kind in ("choice", "bool", "int", "float") else "text"
        if kind == "bool" and not isinstance(default, bool):
            kind = "text"  # a switch has no "not given"
        choices = spec.choices if kind == "choice" else ()
        default = str(default) if kind == "choice" and default is not None else default
        fields.append(FieldSpec(key, kind, default=default, choices=choices))
    return fields
