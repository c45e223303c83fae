"""The ops layer: `hub exec pipeline` is one `ops.execute` call, and a Python script making the
same call records the same runs; a `Cancellation` from another thread ends the run KILLED with
no container left. Real Docker daemon, real ORT image."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from edgehub.errors import OperationCancelled
from edgehub.tracking import RunStore

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "ops-tests"\n')
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


RunShape = tuple[str, str, str, dict[str, object]]


def _shape_of_runs(store_dir: Path, ids: list[str]) -> list[RunShape]:
    """(type, name, status, params) of each run, in order, leaving out paths and the
    measurement's own warnings (latency stability differs between any two runs)."""
    store = RunStore(store_dir)
    try:
        shapes = []
        for run_id in ids:
            log = store.run_log(run_id)
            params = {
                k: p.value
                for k, p in log.params.items()
                if k != "warnings" and (not isinstance(p.value, str) or "/" not in p.value)
            }
            shapes.append((str(log.run_type), log.name, log.status, params))
        return shapes
    finally:
        store.close()


def test_pipeline_from_cli_and_from_python_record_the_same_runs(project: Path) -> None:
    cli = subprocess.run(
        [HUB, "exec", "pipeline", "onnxruntime", "model.onnx", "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    from_cli = json.loads(cli.stdout)

    script = textwrap.dedent(
        """
        import json
        from pathlib import Path
        from edgehub.ops.execute import ExecRequest, execute
        from edgehub.ops.project import open_project

        report = execute(open_project(), ExecRequest("pipeline", "onnxruntime", Path("model.onnx")))
        print(json.dumps(report.to_dict(), default=str))
        """
    )
    py = subprocess.run(
        [sys.executable, "-c", script], cwd=project, capture_output=True, text=True, timeout=300
    )
    assert py.returncode == 0, py.stderr
    from_python = json.loads(py.stdout)

    steps = ("compile", "profile", "invoke", "reference")
    cli_ids = [from_cli[s]["run_id"] for s in steps]
    py_ids = [from_python[s]["run_id"] for s in steps]
    assert set(cli_ids).isdisjoint(py_ids)
    store_dir = project / ".hub"
    assert _shape_of_runs(store_dir, cli_ids) == _shape_of_runs(store_dir, py_ids)
    assert [r["name"] for r in from_cli["accuracy"]] == [r["name"] for r in from_python["accuracy"]]
    for a, b in zip(from_cli["accuracy"], from_python["accuracy"], strict=True):
        assert a["max_abs_error"] == pytest.approx(b["max_abs_error"], rel=1e-6, abs=1e-9)


def test_cancellation_from_another_thread_ends_the_run_killed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.execute import ExecRequest, execute
    from edgehub.ops.project import open_project

    monkeypatch.chdir(project)
    monkeypatch.delenv("EDGEHUB_KEEP_WARM", raising=False)
    cancel = Cancellation()
    seen: list[str] = []
    started = threading.Event()

    def subscriber(event: object) -> None:
        seen.append(getattr(event, "message", ""))
        if getattr(event, "kind", "") in ("stdout", "stderr"):
            started.set()

    request = ExecRequest(
        "profile", "onnxruntime", Path("model.onnx"), options={"profile": {"runs": 200_000}}
    )
    errors: list[BaseException] = []

    def work() -> None:
        try:
            execute(open_project(), request, subscriber=subscriber, cancel=cancel)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    assert started.wait(120), seen
    time.sleep(0.5)
    began = time.monotonic()
    cancel.cancel()
    thread.join(60)
    assert not thread.is_alive()
    assert time.monotonic() - began < 30
    assert errors and isinstance(errors[0], OperationCancelled), errors
    store = RunStore(project / ".hub")
    try:
        (run,) = store.list_runs(limit=None)
        status = run.status
    finally:
        store.close()
    assert status == "KILLED"
    ps = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={os.getpid()}"],
        capture_output=True,
        text=True,
    )
    assert ps.stdout.strip() == ""


def test_compile_with_a_transform_records_the_patterns_and_node_counts(
    tmp_path: Path, ort_image: str
) -> None:
    import onnx

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    model = light / "light_shufflenet.onnx"
    if not model.is_file():
        pytest.skip(f"needs the onnx package's light models ({model} is missing)")
    (tmp_path / "hub.toml").write_text('[project]\nname = "transform"\n')
    # an IR 3 model (initializers listed as inputs too), quantized statically after the rewrite
    argv = ["exec", "compile", "onnxruntime", str(model), "--transform", "tensorrt", "--json"]
    result = subprocess.run(
        [HUB, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["params"]["transform.backend"] == "tensorrt"
    assert report["params"]["transform.fired"]
    before = report["metrics"]["transform.nodes_before"]
    after = report["metrics"]["transform.nodes_after"]
    assert after < before
    store = RunStore(tmp_path / ".hub")
    try:
        run = store.get_run(report["run_id"])
    finally:
        store.close()
    assert run.params["transform.backend"] == "tensorrt"
    assert run.metrics["transform.nodes_after"] == after
