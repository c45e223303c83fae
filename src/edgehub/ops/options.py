"""A component's options and reading an option's value from text (`hub exec --set`, the TUI's
Run form)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

from edgehub.core.component.base import Component
from edgehub.errors import UsageError

__all__ = ["component_options", "parse_value"]


def component_options(component: type[Component]) -> dict[str, Any]:
    """The options a caller may give (every keyword option of ``run`` but the device), each
    with its default."""
    return {k: v for k, v in component._keyword_params.items() if k not in ("device", "devices")}


def parse_value(raw: str, default: Any) -> Any:
    """JSON where it parses (numbers, true/false, null, lists), ``1,3,224,224`` as a tuple of
    ints, enums by value, else the string."""
    text = raw.strip()
    if isinstance(default, Enum):
        try:
            return type(default)(text.lower())
        except ValueError:
            choices = ", ".join(str(m.value) for m in type(default))
            raise UsageError(f"{text!r} is not one of: {choices}") from None
    if "," in text and not text.startswith(("[", "{")):
        try:
            return tuple(int(part) for part in text.split(","))
        except ValueError:
            pass
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, str) and text.lower() in ("none", "null"):
        return None
    return value
