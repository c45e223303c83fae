"""Device edits on hub.toml through `ConfigDocument`: each changed key is set on its own, so
the comments and order of everything left alone stay as the user wrote them.

A device is given as plain data, the shape of its ``[devices.<name>]`` table::

    {"provider": "embedl_onnxruntime", "spec": "Raspberry Pi 5",
     "ssh": {"host": "192.168.1.20", "user": "pi"},
     "overrides": {"ONNXRuntimeProfiler": {"embedl_onnxruntime": {"cli_args": [...]}}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.config.save import ConfigDocument


def write_device(
    document: ConfigDocument, name: str, values: Mapping[str, Any], *, previous: str | None = None
) -> None:
    """Make ``[devices.<name>]`` hold ``values``; ``previous`` is the device's name before the
    edit (renamed in place), None for a new device. Nothing is validated or saved here:
    call ``document.validate()`` / ``document.save()``."""
    if previous is None:
        document.add_device(name)
    elif previous != name:
        document.rename_device(previous, name)
    _update(document, ("devices", name), dict(document.get(("devices", name)) or {}), values)


def _update(
    document: ConfigDocument, at: tuple[str, ...], old: Mapping[str, Any], new: Mapping[str, Any]
) -> None:
    for key in old:
        if key not in new or new[key] is None:
            document.unset((*at, key))
    for key, value in new.items():
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(old.get(key), Mapping):
            _update(document, (*at, key), old[key], value)
        elif old.get(key) != value:
            document.set((*at, key), value)


def copy_name(document: ConfigDocument, name: str) -> str:
    """``name-copy``, ``name-copy2``, ... the first not in the document."""
    taken = set(document.device_names())
    candidate, number = f"{name}-copy", 1
    while candidate in taken:
        number += 1
        candidate = f"{name}-copy{number}"
    return candidate


def duplicate_device(document: ConfigDocument, name: str, new_name: str | None = None) -> str:
    """Append a copy of device ``name``; returns the copy's name."""
    values = document.get(("devices", name))
    if not isinstance(values, Mapping):
        known = ", ".join(document.device_names()) or "none"
        from edgehub.errors import ConfigError

        raise ConfigError(f"device {name!r} is not in hub.toml; declared: {known}")
    target = new_name or copy_name(document, name)
    document.add_device(target, **{k: v for k, v in values.items()})
    return target
