"""`hub exec ab` on a Qualcomm AI Hub device: one profile job per model, both submitted before
either is waited for, an unpaired verdict, recorded as an AB run with two PROFILE children.

This fakes ONLY the service: Qualcomm AI Hub is not reachable from our machines, so
`tests/qai_hub_double.py` (built on the real `qai_hub` client's types) stands in for the
`qai_hub` module, answering each model's profile job with per-iteration times drawn here
(B's twice A's where B has twice the work). `hub`'s own main() runs in this process (the
double lives here); the store it leaves is read back through the real `hub` entry point.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import matmul_chain

from edgehub.cli.main import main
from edgehub.toolchains.qai_hub import client as qai_client
from qai_hub_double import WEB_URL, DoubleInferenceJob, QAIHubDouble, recorded_profile

HUB = str(Path(sys.executable).with_name("hub"))
EXIT_REGRESSION = 5


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> QAIHubDouble:
    ini = tmp_path / "client.ini"
    ini.write_text(f"[api]\napi_token = t0ken\napi_url = {WEB_URL}\nweb_url = {WEB_URL}\n")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    double = QAIHubDouble()
    rng = np.random.default_rng(7)

    def profile_of(model: Any) -> dict[str, Any]:  # a per-iteration time per run, µs
        scale = 2.0 if model.name.startswith("double") else 1.0
        samples = rng.normal(1500.0 * scale, 40.0, size=100).round().astype(int).tolist()
        return recorded_profile(samples)

    double.profile_of = profile_of
    monkeypatch.setattr(qai_client, "load_qai_hub", lambda: double)
    return double


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "ab-qai"\n\n[devices.s24]\nprovider = "qai_hub"\n'
        'spec = "Samsung Galaxy S24"\n\n[devices.s24.qai_hub]\npoll_interval = 0\n'
    )
    matmul_chain(tmp_path / "base.onnx", 4)
    shutil.copy(tmp_path / "base.onnx", tmp_path / "same.onnx")
    matmul_chain(tmp_path / "double.onnx", 8)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _ab(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["exec", "ab", "onnxruntime", "base.onnx", *args, "--device", "s24"])
    out, err = capsys.readouterr()
    return code, out, err


def _hub(project: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [HUB, *args, "--json"], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_model_against_itself_on_ai_hub(
    project: Path,
    service: QAIHubDouble,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs_at_first_wait: list[int] = []
    status = DoubleInferenceJob.get_status

    def watched(job: Any) -> Any:
        jobs_at_first_wait.append(len(service.jobs))
        return status(job)

    monkeypatch.setattr(DoubleInferenceJob, "get_status", watched)
    code, out, err = _ab(capsys, "same.onnx", "--max-regression", "5%")
    assert code == 0, err
    assert "AI Hub: one profile job per model; not interleaved" in out
    assert "test: unpaired: Mann-Whitney U" in out and "not significant" in out
    submitted = service.called("submit_inference_job")
    assert len(submitted) == 2 and all(s["profile"] for s in submitted)
    assert jobs_at_first_wait[0] == 2  # both submitted before either was waited for

    parent = _hub(project, "runs", "show", "latest")
    if parent["run_type"] != "AB":  # latest may be a child; find the parent through it
        parent = _hub(project, "runs", "show", parent["parent_run_id"])
    assert parent["run_type"] == "AB" and parent["status"] == "FINISHED"
    assert parent["params"]["method"] == "unpaired" and "Mann-Whitney" in parent["params"]["test"]
    job_ids = {
        parent["params"]["qai_hub_profile_job_id_a"],
        parent["params"]["qai_hub_profile_job_id_b"],
    }
    assert job_ids == set(service.jobs)
    children = [_hub(project, "runs", "show", parent["params"][k]) for k in ("run_a", "run_b")]
    for child, side in zip(children, "AB", strict=True):
        assert child["run_type"] == "PROFILE" and child["parent_run_id"] == parent["run_id"]
        assert child["params"]["ab.side"] == side and child["metrics"]["runs"] == 100
        assert child["params"]["qai_hub_profile_job_id"] in job_ids
    # the children compare as two independent profiles (no pairing to use)
    compared = _hub(project, "runs", "compare", *(c["run_id"] for c in children))
    assert compared.get("paired") is None and compared["latency"]["significant"] is False


def test_twice_the_work_on_ai_hub_is_flagged(
    project: Path, service: QAIHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _ab(capsys, "double.onnx", "--max-regression", "5%", "--json")
    assert code == EXIT_REGRESSION, err
    report = json.loads(out)
    assert report["method"] == "unpaired" and report["rounds"] == []
    assert report["verdict"]["regressed"] is True and report["verdict"]["median"]["delta_pct"] > 80
    assert set(report["jobs"]) == {"a", "b"}
    assert "AI Hub: one profile job per model; not interleaved" in err  # the run's log


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rounds", "10"], "--rounds does not apply on Qualcomm AI Hub"),
        (["--set", "block_ms=20"], "--set block_ms does not apply on Qualcomm AI Hub"),
    ],
)
def test_what_does_not_apply_on_ai_hub_is_one_line(
    project: Path,
    service: QAIHubDouble,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    code, out, err = _ab(capsys, "same.onnx", *extra)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert service.called("submit_inference_job") == []


def test_a_profile_without_per_iteration_times_fails_the_run_in_one_line(
    project: Path, service: QAIHubDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    def estimate_only(model: Any) -> dict[str, Any]:
        profile = recorded_profile()
        profile["execution_summary"]["all_inference_times"] = []
        return profile

    service.profile_of = estimate_only
    code, out, err = _ab(capsys, "same.onnx")
    assert code != 0 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("hub: error:")]
    assert len(errors) == 1 and "no per-iteration inference times" in errors[0], err
    assert "Traceback" not in err
    listed = subprocess.run(
        [HUB, "runs", "list"], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert "AB" in listed.stdout and "FAILED" in listed.stdout
