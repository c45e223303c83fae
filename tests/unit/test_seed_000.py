"""Seed 000 ("Custom toolchains"), run as written with `embedl_hub` replaced by `edgehub`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edgehub.core import HubContext
from edgehub.core.component import (
    CompiledModel,
    Component,
    ComponentOutput,
    NoProviderError,
    ProviderType,
    RunType,
)
from edgehub.core.device import Device, DeviceSpec, LocalCommandRunner


# 1. Define the output type
@dataclass(frozen=True)
class MyCompiledModel(CompiledModel):
    """Output of MyCompiler."""

    optimization_level: int | None = None


# 2. Define the component
class MyCompiler(Component):
    run_type = RunType.COMPILE

    def __init__(
        self,
        *,
        name: str | None = None,
        device: str | None = None,
        optimize: bool = True,
    ) -> None:
        super().__init__(name=name, device=device, optimize=optimize)

    def run(
        self,
        ctx: HubContext,
        model_path: Path,
        *,
        device: str | None = None,
        optimize: bool = True,
    ) -> MyCompiledModel:
        raise NoProviderError


@MyCompiler.provider(ProviderType.LOCAL)
def _compile_local(
    ctx: HubContext,
    model_path: Path,
    *,
    device: str | None = None,
    optimize: bool = True,
) -> MyCompiledModel:
    """Local compilation implementation."""
    output_path = ctx.artifact_dir / (model_path.stem + ".myformat")
    output_path.write_bytes(model_path.read_bytes()[::-1] if optimize else model_path.read_bytes())
    if ctx.client is not None:
        ctx.client.log_artifact(model_path, name="input")
        ctx.client.log_artifact(output_path, name="path")
        return MyCompiledModel.from_current_run(ctx)
    raise AssertionError("tracking is always on")


@MyCompiler.provider("my_remote_backend")
def _compile_remote(ctx, model_path, *, device=None, optimize=True):  # type: ignore[no-untyped-def]
    dev = ctx.devices[device]
    remote = ctx.device_run_dir(device) / model_path.name
    dev.runner.put(model_path, remote)
    dev.runner.run(["cp", str(remote), str(remote) + ".myformat"])
    local = ctx.artifact_dir / (model_path.stem + ".myformat")
    dev.runner.get(str(remote) + ".myformat", local)
    ctx.client.log_artifact(local, name="path")
    return MyCompiledModel.from_current_run(ctx, optimization_level=2)


@dataclass(frozen=True)
class MyProfilingResult(ComponentOutput):
    latency: float | None = None
    memory_mb: float | None = None


class MyProfiler(Component):
    run_type = RunType.PROFILE

    def __init__(self, *, name=None, device=None):  # type: ignore[no-untyped-def]
        super().__init__(name=name, device=device)

    def run(self, ctx: HubContext, model: MyCompiledModel, *, device=None):  # type: ignore[no-untyped-def]
        raise NoProviderError


@MyProfiler.provider(ProviderType.LOCAL)
def _profile_local(ctx: HubContext, model, *, device=None):  # type: ignore[no-untyped-def]
    size = model.path.local().stat().st_size
    ctx.client.log_metric("$latency", size / 1000)
    return MyProfilingResult.from_current_run(ctx, latency=size / 1000, memory_mb=0.5)


def test_custom_compiler_runs_locally(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"abcdef")
    with HubContext(project_name="My Project") as ctx:
        compiler = MyCompiler(optimize=True)
        result = compiler.run(ctx, Path(model))
    assert isinstance(result, MyCompiledModel)
    assert result.path.local().read_bytes() == b"fedcba"
    assert result.input is not None and result.input.local().read_bytes() == b"abcdef"
    assert result.run_log is not None and result.run_log.status == "FINISHED"
    assert result.run_log.run_type == "COMPILE"


def test_custom_compiler_on_a_remote_provider(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    my_ssh_runner = LocalCommandRunner()  # a runner that works on this machine
    device = Device(
        name="my-device",
        runner=my_ssh_runner,
        spec=DeviceSpec(device_name="My Device"),
        provider_type="my_remote_backend",
    )
    with HubContext(project_name="My Project", devices=[device]) as ctx:
        compiler = MyCompiler(device="my-device", optimize=True)
        result = compiler.run(ctx, Path(model))
        workspace = ctx.device_workspace("my-device")
        assert Path(str(workspace)).is_dir()
    assert result.optimization_level == 2
    assert result.path.local().read_bytes() == b"weights"
    assert result.devices["my-device"]["provider_type"] == "my_remote_backend"
    assert not Path(str(workspace)).exists(), "the device workspace is removed on exit"


def test_profiler_takes_the_compiled_model_and_links_the_parent(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"x" * 2000)
    with HubContext(project_name="My Project") as ctx:
        compiled = MyCompiler().run(ctx, model)
        profile = MyProfiler().run(ctx, compiled)
    assert profile.latency == 2.0 and profile.memory_mb == 0.5
    assert profile.run_log is not None and compiled.run_log is not None
    assert profile.run_log.parent_run_id == compiled.run_log.run_id
    assert profile.run_log.metrics["$latency"].value == 2.0
