"""Seed 001 ("Custom providers"): configs, overrides and providers on built-in components,
run as written with `embedl_hub` replaced by `edgehub` and runners that work on this machine."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from edgehub.core import HubContext
from edgehub.core.compile import ONNXRuntimeCompiler, TFLiteCompiledModel, TFLiteCompiler
from edgehub.core.component import ProviderType
from edgehub.core.device import (
    Device,
    DeviceSpec,
    LocalCommandRunner,
    ProviderConfig,
    SSHCommandRunner,
    SSHConfig,
)
from edgehub.core.profile import ONNXRuntimeProfiler


@dataclass(frozen=True)
class MyBackendConfig(ProviderConfig):
    """Configuration for my custom backend."""

    backend_path: str = "/usr/local/bin/my-backend"
    cli_args: tuple[str, ...] = field(default_factory=tuple)


@ONNXRuntimeCompiler.provider("my_custom_backend")
def _compile_on_my_backend(ctx, onnx_path, *, device=None, **kwargs):  # type: ignore[no-untyped-def]
    dev = ctx.devices[device or "main"]
    cfg = dev.get_provider_config(MyBackendConfig, ONNXRuntimeCompiler)
    backend_path = cfg.backend_path if cfg else "/usr/local/bin/my-backend"
    result = dev.runner.run([backend_path, str(onnx_path)])
    ctx.client.log_param("backend_output", result.stdout.strip())
    ctx.client.log_param("kwargs", sorted(kwargs))
    return None


def get_my_device(
    host: str,
    username: str,
    *,
    name: str = "main",
    config: MyBackendConfig = MyBackendConfig(),
) -> Device:
    runner = SSHCommandRunner(SSHConfig(host=host, username=username))
    return Device(
        name=name,
        runner=runner,
        spec=DeviceSpec(device_name="My Custom Device"),
        provider_type="my_custom_backend",
        provider_config=config,
    )


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_provider_config_reaches_the_provider(tmp_path: Path) -> None:
    tool = _script(tmp_path, "my-backend", 'echo "compiled $1"')
    device = Device(
        name="main",
        runner=LocalCommandRunner(),
        spec=DeviceSpec(device_name="My Custom Device"),
        provider_type="my_custom_backend",
        provider_config=MyBackendConfig(backend_path=str(tool)),
    )
    with HubContext(project_name="p", devices=[device]) as ctx:
        ONNXRuntimeCompiler().run(ctx, tmp_path / "model.onnx")
        run = ctx.client.latest_run_log
    assert run is not None
    assert run.params["backend_output"].value == f"compiled {tmp_path / 'model.onnx'}"
    assert "per_channel" in run.params["kwargs"].value


def test_ssh_device_factory_builds_without_connecting() -> None:
    device = get_my_device("192.0.2.1", "pi", name="board")
    assert device.provider_type == "my_custom_backend"
    assert isinstance(device.runner, SSHCommandRunner)
    assert device.get_provider_config(MyBackendConfig, ONNXRuntimeCompiler) == MyBackendConfig()


def test_per_component_overrides() -> None:
    overrides = dict()
    overrides[ONNXRuntimeProfiler] = MyBackendConfig(
        backend_path="/usr/bin/profile-tool",
    )
    device = Device(
        name="my-device",
        runner=LocalCommandRunner(),
        spec=DeviceSpec(device_name="My Device"),
        provider_type="my_custom_backend",
        provider_config=MyBackendConfig(backend_path="/usr/bin/compile-tool"),
        provider_config_overrides=overrides,
    )
    compile_cfg = device.get_provider_config(MyBackendConfig, ONNXRuntimeCompiler)
    profile_cfg = device.get_provider_config(MyBackendConfig, ONNXRuntimeProfiler)
    assert compile_cfg is not None and compile_cfg.backend_path == "/usr/bin/compile-tool"
    assert profile_cfg is not None and profile_cfg.backend_path == "/usr/bin/profile-tool"


def test_provider_type_strings() -> None:
    assert ProviderType.LOCAL == "local"
    assert {p.value for p in ProviderType} == {
        "local",
        "qai_hub",
        "aws",
        "embedl_onnxruntime",
        "trtexec",
    }
    assert str(ProviderType.TRTEXEC) == "trtexec"


@TFLiteCompiler.provider("my_tflite_device")
def _compile_tflite_ssh(
    ctx: HubContext,
    onnx_path: Path,
    *,
    device: str | None = None,
    input_shape: tuple[int, ...] | None = None,
    calibration_data=None,  # type: ignore[no-untyped-def]
    quantize_io: bool = False,
):  # type: ignore[no-untyped-def]
    dev = ctx.devices[device or "main"]
    # Transfer model to device
    remote_path = "/tmp/" + onnx_path.name
    dev.runner.put(onnx_path, remote_path)
    # Run compilation on the device
    output_remote = "/tmp/" + onnx_path.stem + ".tflite"
    dev.runner.run(["my-tflite-compiler", remote_path, "-o", output_remote])
    # Fetch result
    local_output = ctx.artifact_dir / (onnx_path.stem + ".tflite")
    dev.runner.get(output_remote, local_output)
    # Log and return
    if ctx.client is not None:
        ctx.client.log_artifact(onnx_path, name="input")
        ctx.client.log_artifact(local_output, name="path")
        from edgehub.core.compile import TFLiteCompiledModel

        return TFLiteCompiledModel.from_current_run(ctx)


def test_ssh_style_provider_on_tflite_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir, "my-tflite-compiler", 'tr a-z A-Z < "$1" > "$3"')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    model = tmp_path / f"seed001_{os.getpid()}.onnx"
    model.write_text("tiny model")
    device = Device(
        name="main",
        runner=LocalCommandRunner(),
        spec=DeviceSpec(device_name="board"),
        provider_type="my_tflite_device",
    )
    with HubContext(project_name="p", devices=[device]) as ctx:
        result = TFLiteCompiler(device="main").run(ctx, model)
    assert isinstance(result, TFLiteCompiledModel)
    assert result.path.local().read_text() == "TINY MODEL"
    assert result.input is not None and result.input.local().read_text() == "tiny model"
    Path("/tmp/" + model.name).unlink()
    Path("/tmp/" + model.stem + ".tflite").unlink()
