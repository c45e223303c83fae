"""A fourth runtime, added by its own package alone, runs through the real ``hub exec``.

The package is written into a temporary directory with its ``.dist-info`` (METADATA and an
``edgehub.runtimes`` entry point), put on ``PYTHONPATH`` of the ``hub`` subprocess, and touches
no file of edgehub. Its components are declared the seeds' way; their ``local`` providers run
small real commands (``sha256sum``, ``true``, ``cat``) through the device's
`LocalCommandRunner`. No Docker: nothing here needs a toolchain image.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.tracking import RunStore
from edgehub.tracking.records import RunRecord

HUB = str(Path(sys.executable).with_name("hub"))

PACKAGE = '''
"""echo: a toy runtime that copies models, times `true`, and echoes its inputs back."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from edgehub.core import HubContext
from edgehub.core.component import (
    CompiledModel,
    Component,
    ComponentOutput,
    NoProviderError,
    ProviderType,
    RunType,
)
from edgehub.core.device import ProviderConfig
from edgehub.core.values import Range
from edgehub.toolchains.registry import RuntimeDescriptor
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric


@dataclass(frozen=True)
class EchoBoxConfig(ProviderConfig):
    """Settings of the echo box."""

    provider_type = "echo_box"
    settings_table = "echo"

    greeting: str = field(default="hello", metadata={"help": "what the box says first"})
    volume: Annotated[int, Range(0, 11)] = 5


@dataclass(frozen=True, kw_only=True)
class EchoCompiledModel(CompiledModel):
    """A model the echo compiler copied."""


@dataclass(frozen=True, kw_only=True)
class EchoProfilingResult(ComponentOutput):
    latency: LoggedMetric


@dataclass(frozen=True, kw_only=True)
class EchoInvocationResult(ComponentOutput):
    output: dict[str, Any]
    output_file: LoggedArtifact


class EchoCompiler(Component):
    run_type = RunType.COMPILE

    def __init__(self, *, name: str | None = None, device: str | None = None,
                 suffix: str = ".echo") -> None:
        super().__init__(name=name, device=device, suffix=suffix)

    def run(self, ctx: HubContext, model_path: Path, *, device: str | None = None,
            suffix: str = ".echo") -> EchoCompiledModel:
        raise NoProviderError


class EchoProfiler(Component):
    run_type = RunType.PROFILE

    def __init__(self, *, name: str | None = None, device: str | None = None,
                 runs: int = 3) -> None:
        super().__init__(name=name, device=device, runs=runs)

    def run(self, ctx: HubContext, model: EchoCompiledModel, *, device: str | None = None,
            runs: int = 3) -> EchoProfilingResult:
        raise NoProviderError


class EchoInvoker(Component):
    run_type = RunType.INFERENCE

    def __init__(self, *, name: str | None = None, device: str | None = None) -> None:
        super().__init__(name=name, device=device)

    def run(self, ctx: HubContext, model: EchoCompiledModel, input_data: dict[str, Any], *,
            device: str | None = None) -> EchoInvocationResult:
        raise NoProviderError


@EchoCompiler.provider(ProviderType.LOCAL)
def _compile(ctx, model_path, *, device=None, suffix=".echo"):
    runner = ctx.devices[device].runner
    digest = runner.run(["sha256sum", str(model_path)]).stdout.split()[0]
    out = ctx.artifact_dir / (Path(model_path).stem + suffix)
    runner.run(["cp", str(model_path), str(out)])
    ctx.client.log_param("sha256", digest)
    ctx.client.log_artifact(model_path, name="input")
    ctx.client.log_artifact(out, name="path")
    return EchoCompiledModel.from_current_run(ctx)


@EchoProfiler.provider(ProviderType.LOCAL)
def _profile(ctx, model, *, device=None, runs=3):
    runner = ctx.devices[device].runner
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        runner.run(["true"])
        samples.append((time.perf_counter() - start) * 1000)
    ctx.client.log_metrics({
        "latency_mean_ms": statistics.mean(samples),
        "latency_median_ms": statistics.median(samples),
        "latency_min_ms": min(samples),
        "latency_max_ms": max(samples),
    })
    ctx.client.log_metric("$latency", statistics.median(samples))
    return EchoProfilingResult.from_current_run(ctx)


@EchoInvoker.provider(ProviderType.LOCAL)
def _invoke(ctx, model, input_data, *, device=None):
    runner = ctx.devices[device].runner
    saved = ctx.artifact_dir / "inputs.npz"
    np.savez(saved, **input_data)
    out = ctx.artifact_dir / "output.npz"
    runner.run(["cp", str(saved), str(out)])
    ctx.client.log_artifact(out, name="output_file")
    with np.load(out) as data:
        output = {name: data[name] for name in data.files}
    return EchoInvocationResult.from_current_run(ctx, output=output)


def inspect(ctx, model_path, device_name):
    return {"inputs": [{"name": "x", "shape": [2, 3], "dtype": "float32"}], "outputs": []}


RUNTIME = RuntimeDescriptor(
    name="echo",
    compiler=EchoCompiler,
    profiler=EchoProfiler,
    invoker=EchoInvoker,
    compiled_model=EchoCompiledModel,
    provider_configs=(EchoBoxConfig,),
    inspect=inspect,
)
'''


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A directory holding the installed-looking ``echo_runtime`` distribution."""
    site = tmp_path / "site"
    (site / "echo_runtime").mkdir(parents=True)
    (site / "echo_runtime" / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    info = site / "echo_runtime-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-runtime\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[edgehub.runtimes]\necho = echo_runtime:RUNTIME\n")
    return site


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "echo-tests"\n')
    (folder / "model.onnx").write_bytes(b"not really onnx, the echo runtime does not care")
    return folder


def hub(*args: str, cwd: Path, site: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )


def runs(project: Path) -> list[RunRecord]:
    return RunStore(project / ".hub").list_runs(limit=None)


def ok_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    assert "edgehub: warning" not in result.stderr, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_compile_profile_invoke_a_plugin_runtime(plugin_path: Path, project: Path) -> None:
    compiled = ok_json(
        hub("exec", "compile", "echo", "model.onnx", "--json", cwd=project, site=plugin_path)
    )
    assert compiled["type"] == "COMPILE" and compiled["status"] == "FINISHED"
    model = Path(compiled["artifacts"]["path"])
    assert model.name == "model.echo"
    assert model.read_bytes() == (project / "model.onnx").read_bytes()
    assert len(compiled["params"]["sha256"]) == 64

    profiled = ok_json(
        hub(
            "exec", "profile", "echo", "--from-run", compiled["run_id"], "--set", "runs=4",
            "--json", cwd=project, site=plugin_path,
        )
    )  # fmt: skip
    assert profiled["type"] == "PROFILE"
    assert 0 < profiled["latency_ms"]["min"] <= profiled["latency_ms"]["max"]

    invoked = ok_json(
        hub("exec", "invoke", "echo", "model.onnx", "--json", cwd=project, site=plugin_path)
    )
    assert invoked["type"] == "INFERENCE"
    assert invoked["outputs"] == {"x": {"dtype": "float32", "shape": [2, 3]}}
    with np.load(invoked["artifacts"]["output_file"]) as data:
        assert data["x"].shape == (2, 3)

    recorded = {r.run_type: r for r in runs(project)}
    assert {t: r.status for t, r in recorded.items()} == {
        "COMPILE": "FINISHED",
        "PROFILE": "FINISHED",
        "INFERENCE": "FINISHED",
    }
    assert recorded["PROFILE"].parent_run_id == compiled["run_id"]


def test_plugin_options_are_checked_before_a_run(plugin_path: Path, project: Path) -> None:
    result = hub(
        "exec", "profile", "echo", "model.onnx", "--set", "runs=0", cwd=project, site=plugin_path
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "hub: error: EchoProfiler: option 'runs' must be between 1 and 1000000, got '0'"
    )
    assert runs(project) == []


def test_unknown_runtime_lists_the_plugin(plugin_path: Path, project: Path) -> None:
    result = hub("exec", "compile", "ecko", "model.onnx", cwd=project, site=plugin_path)
    assert result.returncode == 2
    assert "did you mean 'echo'?" in result.stderr
    assert "onnxruntime, tflite, tensorrt, echo" in result.stderr


def test_plugin_settings_table_in_hub_toml(plugin_path: Path, project: Path) -> None:
    """The runtime's ProviderConfig dataclass is the schema of its hub.toml table."""
    head = '[project]\nname = "echo-tests"\n\n[devices.box]\nprovider = "echo_box"\n'
    (project / "hub.toml").write_text(head + "[devices.box.echo]\nvolume = 12\n")
    result = hub("devices", cwd=project, site=plugin_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "hub: error: hub.toml:7: devices.box.echo.volume must be between 0 and 11, got 12"
    )
    (project / "hub.toml").write_text(head + "[devices.box.echo]\nvolum = 3\n")
    result = hub("devices", cwd=project, site=plugin_path)
    assert result.stderr.strip() == (
        "hub: error: hub.toml:7: unknown key 'devices.box.echo.volum'; did you mean 'volume'?"
    )
    (project / "hub.toml").write_text(head + '[devices.box.echo]\ngreeting = "hi"\nvolume = 3\n')
    result = hub("devices", cwd=project, site=plugin_path)
    assert result.returncode == 0, result.stderr
    assert "box" in result.stdout and "echo_box" in result.stdout


def test_a_broken_plugin_is_one_warning(tmp_path: Path, project: Path) -> None:
    site = tmp_path / "broken"
    info = site / "broken_runtime-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-runtime\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[edgehub.runtimes]\nbroken = no_such_module:RUNTIME\n")
    result = hub("exec", "compile", "broken", "model.onnx", cwd=project, site=site)
    assert result.returncode == 2, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "no_such_module" in warnings[0], result.stderr
    assert "Traceback" not in result.stderr
    assert "unknown runtime 'broken'" in result.stderr
