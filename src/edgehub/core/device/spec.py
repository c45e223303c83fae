"""`Device`, `DeviceSpec` and `ProviderConfig`: what a component runs on and how."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from edgehub.core.device.runner import CommandRunner
from edgehub.runners.protocol import SupportsDeviceName

if TYPE_CHECKING:
    from edgehub.core.component.base import Component

__all__ = ["Device", "DeviceSpec", "ProviderConfig"]

ConfigT = TypeVar("ConfigT", bound="ProviderConfig")


class ProviderConfig:
    """Marker base of typed per-provider settings; subclass it as a frozen dataclass."""

    __slots__ = ()


@dataclass(frozen=True)
class DeviceSpec:
    """What the hardware is: a catalog name ("Samsung Galaxy S24") or a description."""

    device_name: str | None = None


@dataclass
class Device:
    """A named target: a runner to reach it, its spec, and the provider type that serves it."""

    name: str
    runner: CommandRunner | None
    spec: DeviceSpec = field(default_factory=DeviceSpec)
    provider_type: str | None = None
    provider_config: ProviderConfig | None = None
    provider_config_overrides: dict[type[Any], ProviderConfig] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("Device.name must be a non-empty string")
        if self.provider_type is not None:
            self.provider_type = str(self.provider_type)
        if self.provider_config is not None and not isinstance(
            self.provider_config, ProviderConfig
        ):
            raise TypeError(
                f"Device {self.name!r}: provider_config must be a ProviderConfig, got "
                f"{type(self.provider_config).__name__}"
            )
        for key, value in self.provider_config_overrides.items():
            if not isinstance(key, type):
                raise TypeError(
                    f"Device {self.name!r}: provider_config_overrides keys must be component "
                    f"classes, got {key!r}"
                )
            if not isinstance(value, ProviderConfig):
                raise TypeError(
                    f"Device {self.name!r}: override for {key.__name__} must be a "
                    f"ProviderConfig, got {type(value).__name__}"
                )
        if isinstance(self.runner, SupportsDeviceName):
            self.runner.device_name = self.name

    def get_provider_config(
        self, config_type: type[ConfigT], component: type[Component] | Component | None = None
    ) -> ConfigT | None:
        """The config for ``component``: its override (or a base class's), else the device's.

        Returns ``None`` when neither is set. A config of another type than ``config_type`` is a
        `TypeError` naming both, not a silent ``None``.
        """
        cls = component if isinstance(component, type) or component is None else type(component)
        chosen: ProviderConfig | None = None
        source = "provider_config"
        if cls is not None:
            for klass in cls.__mro__:
                if klass in self.provider_config_overrides:
                    chosen = self.provider_config_overrides[klass]
                    source = f"provider_config_overrides[{klass.__name__}]"
                    break
        if chosen is None:
            chosen = self.provider_config
        if chosen is None:
            return None
        if not isinstance(chosen, config_type):
            raise TypeError(
                f"Device {self.name!r}: {source} is a {type(chosen).__name__}, but this "
                f"provider needs a {config_type.__name__}; set a {config_type.__name__} there"
            )
        return chosen
