"""Every component class by name (for hub.toml overrides and the CLI)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import did_you_mean

if TYPE_CHECKING:
    from edgehub.core.component.base import Component

__all__ = ["all_components", "component_class", "register_component"]

_COMPONENTS: dict[str, type[Component]] = {}


def register_component(cls: type[Component]) -> None:
    _COMPONENTS.setdefault(cls.__name__, cls)


def all_components() -> dict[str, type[Component]]:
    from edgehub.core.runtimes import all_runtimes

    all_runtimes()  # importing each runtime's package registers its components
    return dict(_COMPONENTS)


def component_class(name: str) -> type[Component]:
    """The component class called ``name``; a `KeyError` names the nearest known one."""
    components = all_components()
    if name in components:
        return components[name]
    hint = did_you_mean(name, components) or f"; known: {', '.join(sorted(components))}"
    raise KeyError(f"unknown component {name!r}{hint}")
