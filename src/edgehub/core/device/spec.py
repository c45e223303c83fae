"""`Device`, `DeviceSpec` and `ProviderConfig`: what a component runs on and how."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from edgehub.runners.protocol import CommandRunner, SupportsDeviceName

if TYPE_CHECKING:
    from edgehub.core.component.base import Component

__all__ = ["Device", "DeviceSpec", "ProviderConfig"]

ConfigT = TypeVar("ConfigT", bound="ProviderConfig")


class ProviderConfig:
    """Marker base of typed per-provider settings; subclass it as a frozen dataclass.

    A subclass that sets ``provider_type`` is that provider's declaration too (the first one
    per provider type counts), read by `Device` so that no code switches on provider names:
    ``in_container`` -- the provider runs its tool in the runtime's pinned container on this
    host's Docker daemon (its board is that daemon, its compiles are reproducible);
    ``batch_runner`` -- ``"module:Class"`` of the runner of a model's batches on its devices for
    every runtime (a service that runs models itself), None: the runtime's own;
    ``unpaired_ab`` -- the provider runs each model as a job of its own (no session to interleave
    two models in), so `hub exec ab` compares the two jobs' samples unpaired (`ops.ab_hub`).
    """

    __slots__ = ()

    in_container: ClassVar[bool] = False
    batch_runner: ClassVar[str | None] = None
    unpaired_ab: ClassVar[bool] = False
    _declared: ClassVar[dict[str, type[ProviderConfig]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        provider = cls.__dict__.get("provider_type")
        if isinstance(provider, str):
            ProviderConfig._declared.setdefault(provider, cls)

    @staticmethod
    def declared(provider_type: str | None) -> type[ProviderConfig] | None:
        """The config class that declares ``provider_type`` (the built-in ones, then those of
        the registered runtimes), or None."""
        if provider_type is None:
            return None
        from edgehub.core.device import configs  # noqa: F401  (the built-in declarations)

        if provider_type not in ProviderConfig._declared:
            from edgehub.core.runtimes import all_runtimes

            all_runtimes()  # loading the runtimes imports (so declares) their providers' configs
        return ProviderConfig._declared.get(provider_type)


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

    @property
    def provider_declaration(self) -> type[ProviderConfig] | None:
        """The `ProviderConfig` class that declares this device's provider, or None."""
        return ProviderConfig.declared(self.provider_type)

    @property
    def in_container(self) -> bool:
        """Whether the device's provider runs its tool in the runtime's pinned container on
        this host's Docker daemon (`ProviderConfig.in_container`)."""
        declared = self.provider_declaration
        return declared is not None and declared.in_container

    def get_provider_config(
        self, config_type: type[ConfigT], component: type[Component] | Component | None = None
    ) -> ConfigT | None:
        """The config for ``component``: its override (or a base class's), else the device's.

        Returns ``None`` when neither is set. A config of another type than ``config_type`` is a
        `TypeError` naming both, not a silent ``None``.
        """
        cls = component if isinstance(component, type) or component is None else type(component)
        overrides = self.provider_config_overrides
        klass = next((k for k in (cls.__mro__ if cls else ()) if k in overrides), None)
        chosen = self.provider_config if klass is None else overrides[klass]
        if chosen is None:
            return None
        if not isinstance(chosen, config_type):
            where = "" if klass is None else f"_overrides[{klass.__name__}]"
            raise TypeError(
                f"Device {self.name!r}: provider_config{where} is a {type(chosen).__name__}, but "
                f"this provider needs a {config_type.__name__}; set a {config_type.__name__} there"
            )
        return chosen
