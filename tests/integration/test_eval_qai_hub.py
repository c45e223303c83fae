"""`evaluate` on a ``qai_hub`` device: one inference job over the whole dataset, the dataset
uploaded once and reused by hash by a later eval, the job fed the compiled model's own input
names.

The Qualcomm AI Hub service cannot be reached from here, so the service alone is faked:
`tests/qai_hub_double.py` stands in for the ``qai_hub`` module (built on the client's real
types; it runs the model with this host's ONNX Runtime). The reference runs for real, in the
pinned ONNX Runtime image.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.ops.eval.run import EvalRequest, evaluate
from edgehub.ops.project import open_project
from edgehub.toolchains.qai_hub import client as qai_client
from edgehub.tracking import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from qai_hub_double import WEB_URL, QAIHubDouble
from unit.test_qai_hub import one_input

pytestmark = [pytest.mark.docker]


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> QAIHubDouble:
    ini = tmp_path / "client.ini"
    ini.write_text(f"[api]\napi_token = t0ken\napi_url = {WEB_URL}\nweb_url = {WEB_URL}\n")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    double = QAIHubDouble()
    double.renamer = lambda name: f"{name}_0"  # the service renames the compiled model's tensors
    monkeypatch.setattr(qai_client, "load_qai_hub", lambda: double)
    return double


def test_eval_on_ai_hub_uploads_the_dataset_once_under_the_compiled_names(
    tmp_path: Path, service: QAIHubDouble, ort_image: str
) -> None:
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "qai-eval"\n\n[devices.s24]\nprovider = "qai_hub"\n'
        'spec = "Samsung Galaxy S24"\n\n[devices.s24.qai_hub]\npoll_interval = 0\n'
    )
    model = one_input(tmp_path)
    rng = np.random.default_rng(4)
    samples = rng.standard_normal((6, 1, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "ds.npz", x=samples)
    reports = []
    for _ in range(2):  # two evals, each in its own context (as two `hub` processes)
        project = open_project(tmp_path / "hub.toml")
        request = EvalRequest("onnxruntime", tmp_path / "ds.npz", model=model, device="s24",
                              goals=["cosine>=0.9999"])  # fmt: skip
        reports.append(evaluate(project, request))
    assert [r.passed for r in reports] == [True, True]
    (upload,) = service.called("upload_dataset")  # the second eval reused it by content hash
    assert list(upload["data"]) == ["x_0"] and len(upload["data"]["x_0"]) == 6
    (reused,) = service.called("get_dataset")  # found through the store's upload record
    (dataset_id,) = service.datasets
    assert reused["dataset_id"] == dataset_id
    jobs = service.called("submit_inference_job")  # one job per eval, every sample in it
    assert len(jobs) == 2 and not any(job["profile"] for job in jobs)
    assert {job["inputs"].dataset_id for job in jobs} == {dataset_id}
    evals = [r for r in RunStore(tmp_path / ".hub").list_runs(limit=None) if r.run_type == "EVAL"]
    assert len(evals) == 2
    for run in evals:  # outputs come back under the original names, every sample in order
        outputs = np.load(str(run.artifacts["outputs"].file_path))
        assert outputs.files == ["y"]
        assert np.array_equal(outputs["y"], np.maximum(samples, 0))
