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

import json
import random
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
from edgehub.toolchains.agent_call import AgentResult
from edgehub.toolchains.batch import BatchOutputs, BatchRunner
from edgehub.core.runtimes import RuntimeDescriptor
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
                 suffix: str = ".echo", stamp: bool = False) -> None:
        super().__init__(name=name, device=device, suffix=suffix, stamp=stamp)

    def run(self, ctx: HubContext, model_path: Path, *, device: str | None = None,
            suffix: str = ".echo", stamp: bool = False) -> EchoCompiledModel:
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
def _compile(ctx, model_path, *, device=None, suffix=".echo", stamp=False):
    runner = ctx.devices[device].runner
    digest = runner.run(["sha256sum", str(model_path)]).stdout.split()[0]
    out = ctx.artifact_dir / (Path(model_path).stem + suffix)
    runner.run(["cp", str(model_path), str(out)])
    if stamp:  # a compile that is not deterministic: the time it ran goes into the model
        with open(out, "a") as handle:
            handle.write(f"compiled {time.time_ns()}")
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


class EchoBatchRunner(BatchRunner):
    """A dataset through the echo model: each sample's inputs are its outputs; `true` is
    timed once per model on the device."""

    runtime = "echo"
    command = "echo.batch"
    component = EchoInvoker

    def __init__(self, ctx, device, scratch=None):
        self.ctx = ctx
        self.device = device or "local"
        self.folder = ctx.artifact_dir / (scratch or "echo-batch")

    def run_many(self, jobs, samples, *, stacked, digest=None):
        if stacked:
            with np.load(samples) as data:
                arrays = {name: data[name] for name in data.files}
        else:
            loaded = []
            for path in sorted(Path(samples).glob("*.npz")):
                with np.load(path) as data:
                    loaded.append({name: data[name] for name in data.files})
            arrays = {name: np.stack([s[name] for s in loaded]) for name in loaded[0]}
        self.folder.mkdir(parents=True, exist_ok=True)
        runner = self.ctx.devices[self.device].runner
        found = []
        for index, job in enumerate(jobs):
            start = time.perf_counter()
            runner.run(["true"])
            metrics = {"inference_ms": (time.perf_counter() - start) * 1000}
            path = self.folder / f"outputs-{index}.npz"
            np.savez(path, **arrays)
            self.ctx.client.log_metrics({f"{job.role}.{k}": v for k, v in metrics.items()})
            found.append(BatchOutputs(arrays, metrics, path, {}))
        return found


def ab(ctx, runtime, model_a, model_b, *, device, rounds, block_ms, warmup, seed,
       input_data=None, input_shape=None):
    """Interleaved blocks of three `true` runs per model, in an order drawn from ``seed``."""
    runner = ctx.devices[device or "local"].runner
    order = random.Random(seed)
    samples = {"a": [], "b": []}
    rows = []
    for _ in range(rounds):
        block = {}
        for side in ("a", "b") if order.random() < 0.5 else ("b", "a"):
            times = []
            for _ in range(3):
                start = time.perf_counter()
                runner.run(["true"])
                times.append((time.perf_counter() - start) * 1000)
            samples[side] += times
            block[side] = statistics.median(times)
        rows.append({"a_ms": block["a"], "b_ms": block["b"], "ratio": block["b"] / block["a"]})
    out = ctx.artifact_dir / "echo-ab"
    out.mkdir(parents=True, exist_ok=True)
    metrics = {}
    for side in ("a", "b"):
        ms = samples[side]
        document = {"samples_us": [m * 1000 for m in ms]}
        (out / f"profile_{side}.json").write_text(json.dumps(document))
        metrics.update({f"{side}_latency_median_ms": statistics.median(ms),
                        f"{side}_latency_mean_ms": statistics.mean(ms)})
    data = {"rounds": rows, "runs_per_block": {"a": 3, "b": 3}}
    return AgentResult(out, metrics=metrics, data=data, command="echo.ab")


RUNTIME = RuntimeDescriptor(
    name="echo",
    compiler=EchoCompiler,
    profiler=EchoProfiler,
    invoker=EchoInvoker,
    compiled_model=EchoCompiledModel,
    provider_configs=(EchoBoxConfig,),
    inspect=inspect,
    batch_runner=EchoBatchRunner,
    deterministic_compile=False,  # with stamp=true
    ab=ab,
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


def _identity_onnx(path: Path) -> None:
    """A real ONNX model, y = x with x of shape [1, 4], for the reference of an eval."""
    from onnx import TensorProto, helper, save_model

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_ab_on_a_plugin_runtime(plugin_path: Path, project: Path) -> None:
    """`hub exec ab` runs the runtime's declared A/B; the verdict and both children recorded."""
    (project / "b.onnx").write_bytes(b"another model the echo runtime does not read")
    report = ok_json(
        hub("exec", "ab", "echo", "model.onnx", "b.onnx", "--rounds", "6", "--set", "seed=3",
            "--json", cwd=project, site=plugin_path)
    )  # fmt: skip
    assert report["method"] == "interleaved" and report["seed"] == 3
    assert len(report["rounds"]) == 6 and report["median_a_ms"] > 0
    recorded = {r.run_id: r for r in runs(project)}
    parent = recorded[report["run_id"]]
    assert (parent.run_type, parent.status, parent.runtime) == ("AB", "FINISHED", "echo")
    for side in ("run_a", "run_b"):
        child = recorded[report[side]]
        assert (child.run_type, child.parent_run_id, child.runtime) == (
            "PROFILE",
            report["run_id"],
            "echo",
        )
    compared = hub("runs", "compare", report["run_a"], report["run_b"], cwd=project,
                   site=plugin_path)  # fmt: skip
    assert compared.returncode in (0, 1), compared.stderr  # paired from the A/B's rounds


def test_ab_refuses_what_the_plugin_does_not_declare(plugin_path: Path, project: Path) -> None:
    """A runtime that declares no ``ab_inputs`` gets no --input (the descriptor is asked)."""
    np.savez(project / "in.npz", x=np.zeros((2, 3), "f4"))
    result = hub("exec", "ab", "echo", "model.onnx", "model.onnx", "--input", "in.npz",
                 cwd=project, site=plugin_path)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "--input does not apply to an A/B on echo" in result.stderr
    assert "Traceback" not in result.stderr and runs(project) == []


def test_eval_on_a_plugin_runtime(plugin_path: Path, project: Path, ort_image: str) -> None:
    """`hub exec eval` compiles with the plug-in, runs the dataset through its declared batch
    runner, and the reference through the reference runtime's (ONNX Runtime's container)."""
    _identity_onnx(project / "id.onnx")
    (project / "ds").mkdir()
    rng = np.random.default_rng(1)
    for i in range(4):
        np.savez(project / "ds" / f"{i}.npz", x=rng.standard_normal((1, 4)).astype("f4"))
    report = ok_json(
        hub("exec", "eval", "echo", "id.onnx", "--dataset", "ds", "--goal", "cosine>=0.9999",
            "--json", cwd=project, site=plugin_path)
    )  # fmt: skip
    assert report["runtime"] == "echo" and report["samples"] == 4
    assert report["passed"] is True
    assert report["outputs"]["y"]["cosine"] == pytest.approx(1.0)
    by_type = {r.run_type: r for r in runs(project)}
    assert by_type["EVAL"].status == "FINISHED" and by_type["EVAL"].runtime == "echo"
    assert (by_type["COMPILE"].status, by_type["COMPILE"].name) == ("FINISHED", "EchoCompiler")
    # --fix asks the descriptor for its repair, which echo does not declare
    result = hub("exec", "eval", "echo", "id.onnx", "--dataset", "ds", "--goal", "cosine>=0.9",
                 "--fix", "2", cwd=project, site=plugin_path)  # fmt: skip
    assert result.returncode == 2 and "--fix repairs onnxruntime, tflite, tensorrt" in (
        result.stderr
    ), result.stderr


def test_sweep_on_a_plugin_runtime(plugin_path: Path, project: Path) -> None:
    (project / "grid.toml").write_text(
        '[sweep]\nstep = "profile"\nmodels = ["model.onnx"]\nruntimes = ["echo"]\n\n'
        '[sweep.vary]\n"profile.runs" = [2, 3]\n'
    )
    result = hub("exec", "sweep", "grid.toml", "--json", cwd=project, site=plugin_path)
    assert result.returncode == 0, result.stderr
    profiles = [r for r in runs(project) if r.run_type == "PROFILE"]
    assert len(profiles) == 2
    assert {(r.status, r.runtime) for r in profiles} == {("FINISHED", "echo")}
    assert sorted(r.params["option.runs"] for r in profiles) == [2, 3]


def test_rerun_on_a_plugin_runtime(plugin_path: Path, project: Path) -> None:
    """A compile the runtime declares not deterministic: its rerun differs in bytes, so the
    two compiled models are compared by their outputs (echo's invoke), which match."""
    compiled = ok_json(
        hub("exec", "compile", "echo", "model.onnx", "--set", "stamp=true", "--json",
            cwd=project, site=plugin_path)
    )  # fmt: skip
    result = hub("runs", "rerun", compiled["run_id"], "--json", cwd=project, site=plugin_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    summary = " ".join(report["summary"])
    assert "echo's compile is not guaranteed to be deterministic" in summary, summary
    assert "outputs of the two compiled models: bit-exact" in summary
    assert report["matched"] is True
    invokes = [r for r in runs(project) if r.run_type == "INFERENCE"]
    assert len(invokes) == 2 and {r.runtime for r in invokes} == {"echo"}
    assert all(r.tags.get("rerun_of") == compiled["run_id"] for r in invokes)
