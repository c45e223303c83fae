"""Device configs: overrides by component class (and base classes), and type mismatches."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from edgehub.core.compile import ONNXRuntimeCompiler
from edgehub.core.device import (
    Device,
    DeviceSpec,
    EmbedlONNXRuntimeConfig,
    LocalCommandRunner,
    ProviderConfig,
    TrtexecConfig,
)
from edgehub.core.profile import ONNXRuntimeProfiler


@dataclass(frozen=True)
class Other(ProviderConfig):
    value: int = 0


class SubCompiler(ONNXRuntimeCompiler):
    """A subclass without its own run: it inherits the providers."""


def _device(**kwargs: object) -> Device:
    return Device("d", LocalCommandRunner(), DeviceSpec("x"), "embedl_onnxruntime", **kwargs)  # type: ignore[arg-type]


def test_override_then_device_config_then_none() -> None:
    base = EmbedlONNXRuntimeConfig(cli_args=("--a",))
    over = EmbedlONNXRuntimeConfig(cli_args=("--b",))
    device = _device(provider_config=base, provider_config_overrides={ONNXRuntimeProfiler: over})
    assert device.get_provider_config(EmbedlONNXRuntimeConfig, ONNXRuntimeProfiler) is over
    assert device.get_provider_config(EmbedlONNXRuntimeConfig, ONNXRuntimeCompiler) is base
    assert _device().get_provider_config(EmbedlONNXRuntimeConfig, ONNXRuntimeCompiler) is None


def test_override_on_a_base_class_applies_to_subclasses() -> None:
    over = EmbedlONNXRuntimeConfig(cli_args=("--sub",))
    device = _device(provider_config_overrides={ONNXRuntimeCompiler: over})
    assert device.get_provider_config(EmbedlONNXRuntimeConfig, SubCompiler) is over
    assert device.get_provider_config(EmbedlONNXRuntimeConfig, SubCompiler()) is over


def test_wrong_config_type_is_a_type_error_not_none() -> None:
    device = _device(provider_config_overrides={ONNXRuntimeProfiler: Other(1)})
    with pytest.raises(
        TypeError,
        match=r"provider_config_overrides\[ONNXRuntimeProfiler\] is a Other, but this provider "
        r"needs a EmbedlONNXRuntimeConfig",
    ):
        device.get_provider_config(EmbedlONNXRuntimeConfig, ONNXRuntimeProfiler)
    with pytest.raises(TypeError, match=r"provider_config is a TrtexecConfig"):
        _device(provider_config=TrtexecConfig()).get_provider_config(
            EmbedlONNXRuntimeConfig, ONNXRuntimeCompiler
        )


def test_device_validates_its_fields() -> None:
    with pytest.raises(TypeError, match="provider_config must be a ProviderConfig"):
        _device(provider_config={"path": "x"})
    with pytest.raises(TypeError, match="keys must be component classes"):
        _device(provider_config_overrides={"ONNXRuntimeProfiler": Other()})
