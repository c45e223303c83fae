"""A component's options, and an option's value read from text by its declared type (`hub
exec --set`, the TUI's Run form)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgehub.core.component.base import Component
from edgehub.core.component.options import parse_option

__all__ = ["component_options", "parse_value"]


def component_options(component: type[Component]) -> dict[str, Any]:
    """The options a caller may give (every keyword option of ``run`` but the device), each
    with its default."""
    return {k: v for k, v in component._keyword_params.items() if k not in ("device", "devices")}


def parse_value(component: type[Component], option: str, raw: str) -> Any:
    """``raw`` converted by the option's declared type (``runs=abc`` is a `UsageError`);
    options of unknown type take JSON, ``1,3,224,224`` as a tuple of ints, or the string."""
    value = parse_option(component, option, raw)
    if option.endswith(("_data", "_path")) and isinstance(value, str):
        value = Path(value)
    return value
