"""`hub exec eval tensorrt` on a machine without an NVIDIA GPU (every machine of this project's CI):
the refusal through the real `hub`, the int8 engine's nodes kept in float (quantization in the
real onnxruntime image, the build in the real tensorrt-rtx image, which needs no GPU for a
chosen compute capability), and the eval / layer search wiring of `ops.eval` with the GPU
alone faked (`FakeGpuAgent`). The same evals on a real GPU: test_eval_tensorrt_gpu.py.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.integration.test_eval_cli import HUB, _outlier_model, runs

from edgehub.errors import UsageError
from edgehub.toolchains.agent_call import AgentResult
from edgehub.toolchains.tensorrt.gpu import GpuStatus, detect_gpu

pytestmark = pytest.mark.docker

onnx = pytest.importorskip("onnx", reason="the onnx package builds the test model")
ort = pytest.importorskip("onnxruntime", reason="the fake GPU runs the QDQ model on the host")

GPU = detect_gpu()
LAYERS = 11
INT8 = ["--set", "precision=int8", "--set", "calibration_data=ods", "--set", "target=sm86"]


@pytest.fixture
def outlier(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / "ods").mkdir(parents=True)
    (folder / "hub.toml").write_text('[project]\nname = "eval-trt"\n')
    rng = np.random.default_rng(5)
    assert _outlier_model(folder / "outlier.onnx", rng) == LAYERS
    for i in range(8):
        np.savez(folder / "ods" / f"{i}.npz", x=rng.standard_normal((1, 3, 8, 8)).astype("f4"))
    return folder


def _hub(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HUB, *args], cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(GPU.visible, reason="checks the refusal where no NVIDIA GPU is visible")
def test_without_a_gpu_eval_fails_in_one_line_and_is_recorded_failed(
    outlier: Path, ort_image: str
) -> None:
    result = _hub(outlier, "exec", "eval", "tensorrt", "outlier.onnx", "--dataset", "ods")
    assert result.returncode == 3, result.stderr  # GpuUnavailableError, as profile / invoke
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("hub: error:")]
    assert "runs the compiled model on this host's NVIDIA GPU and this machine has none" in line
    assert "Traceback" not in result.stderr and result.stdout == ""
    (run,) = runs(outlier)  # nothing compiled: the eval failed before it started
    assert (run.run_type, run.status, run.params["$runtime"]) == ("EVAL", "FAILED", "tensorrt")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--fix", "--goal", "cosine>=0.99"], "give --set precision=int8 --set calibration_data"),
        (["--fix", "--goal", "cosine>=0.99", "--set", "precision=fp16"], "precision=int8"),
        (["--from-run", "abc", "--fix", "--goal", "cosine>=0.9", *INT8], "not a compile run"),
    ],
)
def test_bad_tensorrt_fix_requests_exit_2_before_any_run(
    outlier: Path, args: list[str], needle: str
) -> None:
    model = [] if "--from-run" in args else ["outlier.onnx"]
    result = _hub(outlier, "exec", "eval", "tensorrt", *model, "--dataset", "ods", *args)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and runs(outlier) == []


@pytest.fixture
def rtx(ort_image: str, docker_daemon: Any) -> None:
    from edgehub import images

    if not images.image_status("tensorrt-rtx").built:
        pytest.skip("needs the tensorrt-rtx image (hub images build tensorrt-rtx)")


def test_int8_build_keeps_the_excluded_nodes_in_float(outlier: Path, rtx: None) -> None:
    from edgehub.core import HubContext
    from edgehub.core.compile import TensorRTCompiler
    from edgehub.toolchains.tensorrt.batch import engine_request
    from edgehub.toolchains.tensorrt.precision import float_layers

    options = {"precision": "int8", "calibration_data": outlier / "ods", "target": "sm86"}
    with HubContext("trt-float", artifact_base_dir=outlier / "store") as ctx:
        plain = TensorRTCompiler(**options).run(ctx, outlier / "outlier.onnx")
        kept = TensorRTCompiler(**options, exclude_nodes=["conv3", "relu3"]).run(
            ctx, outlier / "outlier.onnx"
        )
        with pytest.raises(UsageError, match="exclude_nodes keeps nodes in float"):
            TensorRTCompiler(precision="int8", target="sm86", exclude_nodes=["conv3"]).run(
                ctx, outlier / "outlier.onnx"
            )
        files, fields = engine_request(ctx, kept)
    assert kept.run_log is not None and plain.run_log is not None
    params = {k: p.value for k, p in kept.run_log.params.items()}
    assert params["excluded_nodes"] == ["conv3", "relu3"]
    assert params["float_layers"] == {"conv3": ["conv3"], "relu3": ["relu3"]}
    assert not any("kept in float" in w for w in params.get("warnings") or [])
    # the same node in the fully quantized engine reads int8 weights: what the check catches
    info = json.loads(Path(str(plain.run_log.artifacts["layer_info"].local())).read_text())
    (problem,) = float_layers(info["layers"], ["conv3"]).problems
    assert "still reads quantized weights" in problem
    # what trt.batch gets: the engine, the QDQ model it was built from, the build's precision
    assert fields == {"model": "in/outlier.trt", "source": "in/qdq_outlier.onnx",
                      "build": {"precision": "int8", "shapes": None}}  # fmt: skip
    assert files["qdq_outlier.onnx"] == Path(str(kept.run_log.artifacts["qdq_model"].local()))


class FakeGpuAgent:
    """Stands in for the agent on an NVIDIA GPU, which this machine lacks: it answers
    ``trt.batch`` as the real command does (outputs stacked per sample in ``out/``, ``graph``,
    ``engine_layers``), running the QDQ model the engine was built from in this host's ONNX
    Runtime instead of the engine (TensorRT's int8 kernels compute what the Q/DQ pairs say)."""

    runner = None  # no ssh device: the samples travel with each call

    def __init__(self, local_dir: Path) -> None:
        self.local_dir = local_dir
        self.requests: list[dict[str, Any]] = []

    def call(
        self, command: str, request: dict[str, Any], *, inputs: dict[str, Path], **_: Any
    ) -> AgentResult:
        assert command == "trt.batch"
        self.requests.append(json.loads(json.dumps(request)))
        out = self.local_dir / f"{len(self.requests)}-trt_batch" / "out"
        out.mkdir(parents=True)
        folder = inputs[request["samples"].removeprefix("in/")]
        samples = [dict(np.load(f)) for f in sorted(folder.glob("*.npz"))]
        results = []
        for index, job in enumerate(request["runs"]):
            source = inputs[job["source"].removeprefix("in/")]
            model = onnx.load(str(source))
            extra = list(job.get("extra_outputs") or [])
            model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in extra)
            session = ort.InferenceSession(model.SerializeToString())
            names = [o.name for o in session.get_outputs()]
            values = [session.run(names, s) for s in samples]
            arrays = {n: np.stack([v[i] for v in values]) for i, n in enumerate(names)}
            np.savez(out / f"outputs-{index}.npz", **arrays)
            result: dict[str, Any] = {"inference_ms": 1.0, "load_ms": 1.0, "outputs": []}
            if job.get("graph"):
                result["graph"] = [
                    {
                        "name": n.name,
                        "op": n.op_type,
                        "inputs": list(n.input),
                        "outputs": list(n.output),
                    }
                    for n in model.graph.node
                ]
            if extra:
                result["engine_layers"] = {"engine": 6, "probe": 6 + len(extra)}
            results.append(result)
        return AgentResult(out, data={"samples": len(samples), "runs": results})


def test_eval_and_layer_search_wiring_with_the_gpu_faked(
    outlier: Path, rtx: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgehub.core.context import HubContext
    from edgehub.ops.eval.run import EvalRequest, evaluate
    from edgehub.ops.project import open_project
    from edgehub.toolchains import host_gpu
    from edgehub.toolchains.tensorrt import batch, gpu

    seen = GpuStatus(True, ("GPU 0: fake (stands in for an NVIDIA GPU)",), "nvidia-smi")
    monkeypatch.setattr(host_gpu, "detect_gpu", lambda: seen)
    monkeypatch.setattr(gpu, "detect_gpu", lambda: seen)
    monkeypatch.setattr(batch, "detect_gpu", lambda: seen)
    real_runner = HubContext.docker_runner

    def runner(self: HubContext, image: str, **options: Any) -> Any:  # no GPU container here
        return None if options.get("gpus") else real_runner(self, image, **options)

    monkeypatch.setattr(HubContext, "docker_runner", runner)
    agents: list[FakeGpuAgent] = []

    def fake_agent(runner: Any, workdir: Any, local: Path) -> FakeGpuAgent:
        agents.append(FakeGpuAgent(local))
        return agents[-1]

    monkeypatch.setattr(batch, "AgentCall", fake_agent)
    request = EvalRequest("tensorrt", outlier / "ods", model=outlier / "outlier.onnx",
                          options={"precision": "int8", "calibration_data": outlier / "ods",
                                   "target": "sm86"},
                          goals=["cosine>=0.9"], layers=0.2)  # fmt: skip
    report = evaluate(open_project(outlier / "hub.toml"), request)
    assert report.status == "FINISHED" and report.runtime == "tensorrt" and report.samples == 8
    assert report.layers is not None
    first = report.layers["first_divergent"]
    assert first["node"] == "relu3" and first["fused"] == ["conv3"]  # the quantizer's fold
    assert 1 <= report.layers["runs"] <= math.ceil(math.log2(LAYERS)) + 2
    assert len(report.layers["fusion_changed"]) == report.layers["runs"]  # reported each time
    requests = [r for agent in agents for r in agent.requests]
    assert requests[0]["runs"][0]["graph"] is True and requests[0]["runs"][0]["source"]
    probes = [r["runs"][0]["extra_outputs"] for r in requests[1:]]
    assert len(probes) == report.layers["runs"] and all(1 <= len(p) <= 3 for p in probes)
    assert all(r["runs"][0]["build"]["precision"] == "int8" for r in requests)
    by_type = {r.run_type: r for r in runs(outlier)}
    assert by_type["EVAL"].status == "FINISHED"
    assert by_type["EVAL"].params["first_divergent_layer"] == "relu3"
    assert by_type["COMPILE"].params["precision"] == "int8"


@pytest.mark.skipif(GPU.visible, reason="checks the refusal where no NVIDIA GPU is visible")
def test_the_evaluator_component_fails_its_run_without_a_gpu(outlier: Path, rtx: None) -> None:
    from edgehub.core import HubContext
    from edgehub.core.compile import TensorRTCompiler
    from edgehub.core.evaluate import TensorRTEvaluator
    from edgehub.errors import GpuUnavailableError
    from edgehub.tracking import RunStore

    with HubContext("trt-evaluator", artifact_base_dir=outlier / "store") as ctx:
        engine = TensorRTCompiler(target="sm86").run(ctx, outlier / "outlier.onnx")
        with pytest.raises(GpuUnavailableError, match="TensorRT eval runs the TensorRT engine"):
            TensorRTEvaluator().run(ctx, engine, outlier / "ods")
    evals = [r for r in RunStore(outlier / "store").list_runs(limit=None) if r.run_type == "EVAL"]
    assert [(r.status, r.params["$runtime"]) for r in evals] == [("FAILED", "tensorrt")]


class FakeTrtexecProfiler:
    """Stands in for `TensorRTProfiler` (trtexec on an NVIDIA GPU, which this machine lacks):
    a fixed latency per model, so the repair's table can be checked here."""

    def __init__(self, *, name: str | None = None) -> None:
        self.name = name

    def run(self, ctx: Any, model: Any, *, device: str | None = None) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(latency=SimpleNamespace(value=0.5), run_log=None)


def test_fix_wiring_keeps_the_outlier_layer_in_float_with_the_gpu_faked(
    outlier: Path, rtx: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from edgehub.core import runtimes as registry
    from edgehub.core.context import HubContext
    from edgehub.ops.eval.run import EvalRequest, evaluate_and_fix
    from edgehub.ops.project import open_project
    from edgehub.toolchains import host_gpu
    from edgehub.toolchains.tensorrt import batch, gpu

    seen = GpuStatus(True, ("GPU 0: fake (stands in for an NVIDIA GPU)",), "nvidia-smi")
    monkeypatch.setattr(host_gpu, "detect_gpu", lambda: seen)
    monkeypatch.setattr(gpu, "detect_gpu", lambda: seen)
    monkeypatch.setattr(batch, "detect_gpu", lambda: seen)
    real_runner, real_runtime = HubContext.docker_runner, registry.get_runtime

    def runner(self: HubContext, image: str, **options: Any) -> Any:  # no GPU container here
        return None if options.get("gpus") else real_runner(self, image, **options)

    def runtime(name: str) -> Any:
        found = real_runtime(name)
        if name != "tensorrt":
            return found
        return dataclasses.replace(found, profiler=FakeTrtexecProfiler)

    monkeypatch.setattr(HubContext, "docker_runner", runner)
    monkeypatch.setattr(batch, "AgentCall", lambda runner, workdir, local: FakeGpuAgent(local))
    monkeypatch.setattr(registry, "get_runtime", runtime)
    request = EvalRequest("tensorrt", outlier / "ods", model=outlier / "outlier.onnx",
                          options={"precision": "int8", "calibration_data": outlier / "ods",
                                   "target": "sm86"},
                          goals=["cosine>=0.99"], fix=5)  # fmt: skip
    report, fix = evaluate_and_fix(open_project(outlier / "hub.toml"), request)
    assert fix is not None and fix.passed and report.passed, fix
    assert 1 <= len(fix.kept_layers) <= 3 and {"conv3", "relu3"} <= set(fix.kept_nodes)
    table = {row["model"]: row for row in fix.table}
    assert [table[m]["passed"] for m in ("float32", "int8", "repaired")] == [True, False, True]
    by_id = {r.run_id: r for r in runs(outlier)}
    repaired = by_id[table["repaired"]["compile_run"]]
    assert repaired.params["excluded_nodes"] == fix.kept_nodes
    assert set(repaired.params["float_layers"]) == set(fix.kept_nodes)
    assert all(repaired.params["float_layers"].values())  # each kept node is a float layer
    assert by_id[table["float32"]["compile_run"]].params["precision"] == "fp32"
