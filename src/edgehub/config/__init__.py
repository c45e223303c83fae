"""hub.toml: its schema (`schema`), checks (`check`), loading (`load`), the devices it declares
(`devices`) and comment-preserving edits (`save`). The format is documented in
`edgehub.config.schema`.

This package imports no docker, paramiko, qai_hub or textual; SSH runners are built (not
connected) only when `to_devices` meets an ``ssh`` table. `to_devices` and `ConfigDocument`
load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.config.load import default_config, find_config, load_config, parse_config
from edgehub.config.schema import (
    CONFIG_FILENAME,
    DeviceSection,
    HubConfig,
    ImagesSection,
    ProjectSection,
    ProviderSettings,
    SchemaError,
    SSHSection,
)
from edgehub.lazy import names_from

if TYPE_CHECKING:
    from edgehub.config.devices import (
        ComponentLookup,
        default_component_lookup,
        to_device,
        to_devices,
    )
    from edgehub.config.save import ConfigDocument, atomic_write

__all__ = [
    "CONFIG_FILENAME",
    "ComponentLookup",
    "ConfigDocument",
    "DeviceSection",
    "HubConfig",
    "ImagesSection",
    "ProjectSection",
    "ProviderSettings",
    "SSHSection",
    "SchemaError",
    "atomic_write",
    "default_component_lookup",
    "default_config",
    "find_config",
    "load_config",
    "parse_config",
    "to_device",
    "to_devices",
]

# `devices` (which imports the device classes) and `save` (tomlkit) load on first use, so that
# reading hub.toml stays fast for `hub --help` and friends.
__getattr__ = names_from(
    __name__,
    {
        **dict.fromkeys(
            ["ComponentLookup", "default_component_lookup", "to_device", "to_devices"], "devices"
        ),
        **dict.fromkeys(["ConfigDocument", "atomic_write"], "save"),
    },
)
