"""`hub exec … --from-job` through the ops layer, for a qai_hub device of hub.toml.

This does NOT reach the live Qualcomm AI Hub service (not reachable from our machines): it
uses `tests/qai_hub_double.py`, a test double of the `qai_hub` module built on the client's
real types, and checks that resuming attaches to the submitted job instead of submitting again.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import qai_hub as real
from onnx import TensorProto, helper

from edgehub.errors import ProfileError, UsageError
from edgehub.ops.execute import ExecRequest, execute
from edgehub.ops.project import open_project
from edgehub.toolchains.qai_hub import client as qai_client
from qai_hub_double import WEB_URL, QAIHubDouble

State = real.JobStatus.State


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> QAIHubDouble:
    ini = tmp_path / "client.ini"
    ini.write_text(f"[api]\napi_token = t0ken\napi_url = {WEB_URL}\nweb_url = {WEB_URL}\n")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    double = QAIHubDouble()
    monkeypatch.setattr(qai_client, "load_qai_hub", lambda: double)
    return double


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "qai"\n\n[devices.s24]\nprovider = "qai_hub"\n'
        'spec = "Samsung Galaxy S24"\n\n[devices.s24.qai_hub]\npoll_interval = 0\n'
        "timeout = 0.05\n"
    )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "one.onnx"))
    return tmp_path


def test_from_job_attaches_to_the_submitted_profile_job(
    project: Path, service: QAIHubDouble
) -> None:
    service.script["profile"] = [State.CREATED, State.PROVISIONING_DEVICE]
    hub = open_project(project / "hub.toml")
    request = ExecRequest("profile", "onnxruntime", project / "one.onnx", device="s24")
    with pytest.raises(ProfileError, match="--from-job"):
        execute(hub, request)
    (job,) = service.jobs.values()
    job._states = [State.MEASURING_PERFORMANCE, State.SUCCESS]  # the service went on

    resumed = execute(
        hub,
        ExecRequest(
            "profile", "onnxruntime", project / "one.onnx", device="s24", from_job=job.job_id
        ),
    )
    assert len(service.called("submit_inference_job")) == 1  # not submitted again
    assert resumed.status == "FINISHED"  # type: ignore[union-attr]
    assert resumed.params["qai_hub_resumed_job_id"] == job.job_id  # type: ignore[union-attr]


def test_from_job_does_not_apply_to_a_pipeline(project: Path) -> None:
    hub = open_project(project / "hub.toml")
    request = ExecRequest("pipeline", "onnxruntime", project / "one.onnx", from_job="j1")
    with pytest.raises(UsageError, match="--from-job does not apply to pipeline"):
        execute(hub, request)


def test_timeout_stops_waiting_for_a_job_and_says_it_keeps_running(
    project: Path, service: QAIHubDouble
) -> None:
    """`--timeout` (`ExecRequest.timeout`) also bounds a wait on the service, which runs no
    command to stop: the run ends FAILED, the job id is given to resume."""
    from edgehub.errors import CommandTimeout
    from edgehub.events import LogEvent
    from edgehub.tracking import RunStore

    text = (project / "hub.toml").read_text().replace("timeout = 0.05", "timeout = 600")
    (project / "hub.toml").write_text(text.replace("poll_interval = 0", "poll_interval = 5"))
    service.script["profile"] = [State.CREATED, State.PROVISIONING_DEVICE]
    seen: list[LogEvent] = []
    request = ExecRequest("profile", "onnxruntime", project / "one.onnx", device="s24", timeout=0.5)
    with pytest.raises(CommandTimeout, match=r"timed out after 0\.5 s"):
        execute(open_project(project / "hub.toml"), request, subscriber=seen.append)
    (job,) = service.jobs.values()
    assert job.status_reads == 1  # left during the first pause (5 s), not after it
    warnings = [e.message for e in seen if e.kind == "warning"]
    assert any(f"job {job.job_id} keeps running" in w and "--from-job" in w for w in warnings)
    (run,) = RunStore(project / ".hub").list_runs(limit=None)
    assert run.status == "FAILED"
