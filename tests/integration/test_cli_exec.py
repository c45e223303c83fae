"""`hub exec` through its real entry point, against the real Docker daemon and ORT image."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.tracking import RunRecord, RunStore

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))


def hub(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=300
    )


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(
        '[project]\nname = "cli-tests"\n\n[devices.local]\nprovider = "local"\n'
        '\n[devices.board]\nprovider = "embedl_onnxruntime"\n'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def runs(project: Path) -> list[RunRecord]:
    return RunStore(project / ".hub").list_runs(limit=None)


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], code: int, *needles: str
) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert result.stdout == ""
    return lines[0]


def test_pipeline_json(project: Path) -> None:
    result = hub("exec", "pipeline", "onnxruntime", "model.onnx", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {"compile", "profile", "invoke", "reference", "accuracy"} <= set(report)
    latency = report["profile"]["latency_ms"]
    assert set(latency) == {"mean", "median", "min", "max", "p90", "p95", "p99", "std"}
    assert latency["min"] <= latency["median"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    (row,) = report["accuracy"]
    assert row["name"] == "probabilities" and row["cosine_similarity"] > 0.95
    assert report["profile"]["environment"]["onnxruntime"] == "1.31.1"
    assert report["profile"]["environment"]["image_digest"].startswith("sha256:")
    assert Path(report["compile"]["artifacts"]["path"]).is_file()
    statuses = {r.run_type: r.status for r in runs(project)}
    assert statuses == {"COMPILE": "FINISHED", "PROFILE": "FINISHED", "INFERENCE": "FINISHED"}
    assert "step 2/4: profile" in result.stderr


def test_compile_then_profile_and_invoke_from_run(project: Path, tmp_path: Path) -> None:
    compiled = hub(
        "exec",
        "compile",
        "onnxruntime",
        "model.onnx",
        "--set",
        "quantization=dynamic",
        "--json",
        cwd=project,
    )
    assert compiled.returncode == 0, compiled.stderr
    run_id = json.loads(compiled.stdout)["run_id"]
    profile = hub(
        "exec",
        "profile",
        "onnxruntime",
        "--from-run",
        run_id[:8],
        "--set",
        "runs=20",
        "--set",
        "profiling_method=python",
        "--json",
        cwd=project,
    )
    assert profile.returncode == 0, profile.stderr
    report = json.loads(profile.stdout)
    assert report["metrics"]["runs"] == 20
    inputs = tmp_path / "in.npz"
    np.savez(inputs, image=np.ones((1, 3, 32, 32), np.float32))
    invoked = hub(
        "exec",
        "invoke",
        "onnxruntime",
        "--from-run",
        "latest",
        "--input",
        str(inputs),
        "--json",
        cwd=project,
    )
    # 'latest' is the latest run of the kind --from-run needs: the compile run, not the profile
    assert invoked.returncode == 0, invoked.stderr
    invoked = hub(
        "exec",
        "invoke",
        "onnxruntime",
        "--from-run",
        run_id,
        "--input",
        str(inputs),
        "--json",
        cwd=project,
    )
    assert invoked.returncode == 0, invoked.stderr
    assert json.loads(invoked.stdout)["outputs"]["probabilities"]["shape"] == [1, 10]
    store = RunStore(project / ".hub")
    parents = {r.run_type: r.parent_run_id for r in store.list_runs(limit=None)}
    assert parents["PROFILE"] == run_id and parents["INFERENCE"] == run_id
    shown = hub("runs", "show", run_id[:8], cwd=project)
    assert shown.returncode == 0 and "quantize-dynamic" in shown.stdout
    compared = hub("runs", "compare", run_id, "latest", "--json", cwd=project)
    assert compared.returncode == 0 and json.loads(compared.stdout)["a"] == run_id


def test_missing_model(project: Path) -> None:
    result = hub("exec", "compile", "onnxruntime", "nope.onnx", cwd=project)
    assert_one_line_error(result, 2, "nope.onnx", "not found")


def test_non_onnx_file_fails_and_records_a_failed_run(project: Path) -> None:
    (project / "notes.onnx").write_text("this is not a model")
    result = hub("exec", "compile", "onnxruntime", "notes.onnx", cwd=project)
    assert_one_line_error(result, 2, "notes.onnx", "not an ONNX model")
    assert [r.status for r in runs(project)] == ["FAILED"]


@pytest.mark.parametrize(
    ("arrays", "needle"),
    [
        ({"img": np.zeros((1, 3, 32, 32), np.float32)}, "image"),
        ({"image": np.zeros((1, 3, 16, 16), np.float32)}, "image: float32[1,3,32,32]"),
    ],
)
def test_wrong_input_names_or_shapes(
    project: Path, tmp_path: Path, arrays: dict[str, np.ndarray], needle: str
) -> None:
    inputs = tmp_path / "bad.npz"
    np.savez(inputs, **arrays)
    result = hub("exec", "invoke", "onnxruntime", "model.onnx", "--input", str(inputs), cwd=project)
    assert_one_line_error(result, 2, needle)
    assert [r.status for r in runs(project)] == ["FAILED"]


def test_unknown_device(project: Path) -> None:
    result = hub("exec", "profile", "onnxruntime", "model.onnx", "--device", "rpi", cwd=project)
    assert_one_line_error(result, 2, "device 'rpi' not in hub.toml", "local, board")


def test_device_without_a_provider_for_the_component(project: Path) -> None:
    # TensorRT's profiler has no embedl_onnxruntime provider (ONNX Runtime's has one)
    result = hub("exec", "profile", "tensorrt", "model.onnx", "--device", "board", cwd=project)
    assert_one_line_error(
        result, 2, "no provider for 'embedl_onnxruntime'", "available providers: local, trtexec"
    )


def test_unknown_runtime(project: Path) -> None:
    assert_one_line_error(
        hub("exec", "compile", "onnx", "model.onnx", cwd=project),
        2,
        "unknown runtime 'onnx'",
        "did you mean 'onnxruntime'",
    )


def test_unknown_option(project: Path) -> None:
    result = hub(
        "exec", "compile", "onnxruntime", "model.onnx", "--set", "per_chanel=true", cwd=project
    )
    assert_one_line_error(result, 2, "unknown option 'per_chanel'", "did you mean 'per_channel'")


def test_malformed_hub_toml(project: Path) -> None:
    (project / "hub.toml").write_text(
        '[project]\nname = "x"\n\n[devices.local]\nprovidr = "local"\n'
    )
    result = hub("exec", "compile", "onnxruntime", "model.onnx", cwd=project)
    assert_one_line_error(result, 2, "hub.toml:5", "providr", "did you mean 'provider'")


def test_daemon_not_running(project: Path) -> None:
    result = hub(
        "exec",
        "profile",
        "onnxruntime",
        "model.onnx",
        cwd=project,
        env={"DOCKER_HOST": f"unix://{project}/no-docker.sock"},
    )
    assert_one_line_error(result, 3, "Docker daemon")
    assert [r.status for r in runs(project)] == ["FAILED"]


def test_image_not_built(project: Path, tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(REPO / "images", images)
    lock = images / "onnxruntime" / "requirements.lock"
    lock.write_text(lock.read_text() + "\n# changed: a tag that was never built\n")
    result = hub(
        "exec",
        "profile",
        "onnxruntime",
        "model.onnx",
        cwd=project,
        env={"EDGEHUB_IMAGES_DIR": str(images)},
    )
    assert_one_line_error(result, 3, "not built", "hub images build onnxruntime")
    assert [r.status for r in runs(project)] == ["FAILED"]
