"""Parts of the qai_hub provider that need no service at all (nothing here reaches Qualcomm
AI Hub): the offline setup check, option strings, the upload cache, profile summaries."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from edgehub.errors import InputDataError, UsageError
from edgehub.toolchains.qai_hub import QAIHubConfig, check_qai_hub
from edgehub.toolchains.qai_hub import client as qai_client
from edgehub.toolchains.qai_hub.datasets import calibration_entries
from edgehub.toolchains.qai_hub.profile_summary import summarize_profile
from edgehub.toolchains.qai_hub.uploads import UploadCache, dataset_hash


def test_importing_the_providers_does_not_import_qai_hub() -> None:
    code = "import edgehub.toolchains.qai_hub, sys; print('qai_hub' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_check_reports_token_and_version_without_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini = tmp_path / "client.ini"
    ini.write_text("[api]\napi_token = tok-SECRET-42\n")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    check = check_qai_hub()
    assert check.ok and check.token_configured and check.version_accepted
    assert check.client_version == "0.56.0"
    assert "SECRET" not in repr(check) + check.message
    assert check.message == f"qai-hub 0.56.0, API token configured in {ini}"

    ini.write_text("[api]\napi_token =\n")
    assert not check_qai_hub().token_configured
    assert "qai-hub configure --api_token TOKEN" in check_qai_hub().message
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(tmp_path / "absent.ini"))
    assert not check_qai_hub().token_configured

    monkeypatch.setattr(qai_client, "installed_client_version", lambda: "0.41.2")
    old = check_qai_hub()
    assert not old.version_accepted and not old.ok
    assert old.message.startswith("qai-hub 0.41.2 is installed but edgehub works with 0.56.x")
    monkeypatch.setattr(qai_client, "installed_client_version", lambda: None)
    assert check_qai_hub().message.startswith("qai-hub client not installed")


def test_option_strings_per_job_kind() -> None:
    config = QAIHubConfig(compute_unit="npu,cpu", qairt_version="2.37", options="--foo 'a b'")
    assert config.job_options("compile", target_runtime="onnx") == (
        "--target_runtime onnx --compute_unit npu,cpu --foo 'a b'"
    )
    assert config.job_options("profile", profiler_iterations=20) == (
        "--compute_unit npu,cpu --qairt_version 2.37 --max_profiler_iterations 20 --foo 'a b'"
    )
    assert (
        config.job_options("inference") == "--compute_unit npu,cpu --qairt_version 2.37 --foo 'a b'"
    )
    assert config.job_options("quantize") == ""
    with pytest.raises(UsageError, match="repeat --target_runtime"):
        QAIHubConfig(options="--target_runtime qnn_dlc").job_options(
            "compile", target_runtime="onnx"
        )
    with pytest.raises(UsageError, match="cannot be parsed: No closing quotation"):
        QAIHubConfig(options="--x 'unclosed")
    with pytest.raises(UsageError, match="weights_dtype 'int3'"):
        QAIHubConfig(weights_dtype="int3")


def test_upload_cache_reuses_by_content_and_expires_datasets(tmp_path: Path) -> None:
    path = tmp_path / "uploads.json"
    model_file = tmp_path / "m.onnx"
    model_file.write_bytes(b"model-1")
    uploads: list[str] = []
    fetched: list[str] = []

    def upload_model() -> SimpleNamespace:
        uploads.append("model")
        return SimpleNamespace(model_id=f"m{len(uploads)}")

    def fetch(object_id: str) -> SimpleNamespace:
        fetched.append(object_id)
        return SimpleNamespace(model_id=object_id, dataset_id=object_id)

    cache = UploadCache(path)
    first = cache.model(model_file, upload_model, fetch)
    assert cache.model(model_file, upload_model, fetch) is first
    assert UploadCache(path).model(model_file, upload_model, fetch).model_id == "m1"
    assert uploads == ["model"] and fetched == ["m1"]
    model_file.write_bytes(b"model-2")  # changed content: uploaded again
    assert cache.model(model_file, upload_model, fetch).model_id == "m2"

    entries = {"x": [np.zeros((1, 2), np.float32)]}
    assert dataset_hash(entries) != dataset_hash({"x": [np.zeros((1, 2), np.float64)]})
    soon = SimpleNamespace(dataset_id="d1", expiration_time=None)
    cache.dataset(entries, lambda: soon, fetch)
    assert cache.dataset(entries, lambda: pytest.fail("uploaded again"), fetch) is soon
    records = json.loads(path.read_text())
    key = f"dataset:{dataset_hash(entries)}"
    records[key]["expires_at"] = time.time() + 3600  # less than a day left
    path.write_text(json.dumps(records))
    fresh = SimpleNamespace(dataset_id="d2", expiration_time=None)
    assert cache.dataset(entries, lambda: fresh, fetch) is fresh


def test_profile_without_raw_times_falls_back_to_the_estimate() -> None:
    summary = summarize_profile(
        {
            "execution_summary": {
                "estimated_inference_time": 2500,
                "estimated_inference_peak_memory": None,
                "warm_load_time": None,
            },
            "execution_detail": [],
        }
    )
    assert summary.metrics == {
        "estimated_inference_time_ms": 2.5,
        "latency": 2.5,
        "fps": 400.0,
    }
    assert summary.layers == [] and summary.params == {}


def test_calibration_from_a_folder_of_samples(tmp_path: Path) -> None:
    specs = {"x": ((1, 4), "float32")}
    for i in range(3):
        np.savez(tmp_path / f"{i}.npz", x=np.full((1, 4), i, np.float32))
    entries = calibration_entries(tmp_path, specs)
    assert [float(s[0, 0]) for s in entries["x"]] == [0.0, 1.0, 2.0]
    same_rank = calibration_entries({"x": np.zeros((5, 4), np.float32)}, specs)
    assert len(same_rank["x"]) == 5 and same_rank["x"][0].shape == (1, 4)
    with pytest.raises(InputDataError, match=r"has inputs \['y'\]; the model takes x"):
        calibration_entries({"y": np.zeros((2, 1, 4))}, specs)
    with pytest.raises(InputDataError, match=r"is \(1, 3\) float32; the model takes \(1, 4\)"):
        calibration_entries({"x": np.zeros((2, 3), np.float32)}, specs)
