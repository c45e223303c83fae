"""The store's writes per run (issue 39): a warm `hub exec invoke` records its run in a few
transactions (counted in SQLite's write-ahead log), with everything it recorded before; a run is
visible RUNNING while it runs, with what it logged so far, and a killed one reads KILLED."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HUB = [sys.executable, "-m", "edgehub.cli.main"]


def _hub(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, EDGEHUB_KEEP_WARM="60", **env)
    return subprocess.run(HUB + list(args), cwd=cwd, env=full, capture_output=True, text=True)


def _latest(store: Path) -> dict[str, object]:
    """`hub runs show latest --json` of the store ``store``."""
    shown = _hub(store.parent, "runs", "show", "latest", "--json", EDGEHUB_STORE=str(store))
    assert shown.returncode == 0, shown.stderr
    record: dict[str, object] = json.loads(shown.stdout)
    return record


def _script(tmp_path: Path, source: str) -> list[str]:
    """The command that runs ``source`` with the store ``tmp_path/store``."""
    script = tmp_path / "script.py"
    script.write_text(source)
    return [sys.executable, str(script), str(tmp_path / "store")]


def _commits(wal: Path) -> int:
    """The transactions in a write-ahead log: its valid frames that end a commit."""
    data = wal.read_bytes()
    if len(data) < 32:
        return 0
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    commits, offset = 0, 32
    while offset + 24 + page_size <= len(data):
        header = data[offset : offset + 24]
        if header[8:16] != salts:
            break  # frames of before the log restarted
        commits += struct.unpack(">I", header[4:8])[0] != 0
        offset += 24 + page_size
    return commits


@pytest.mark.docker
def test_a_warm_invoke_records_its_run_in_a_few_transactions(
    tmp_path: Path, ort_image: str
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hub.toml").write_text('[project]\nname = "batching"\n')
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", project / "model.onnx")
    invoke = ("-q", "exec", "invoke", "onnxruntime", "model.onnx")
    first = _hub(project, *invoke)
    assert first.returncode == 0, first.stderr
    db = project / ".hub" / "runs.db"
    reader = sqlite3.connect(db)  # open: the log is kept when hub closes the store
    try:
        reader.execute("SELECT count(*) FROM runs").fetchone()
        second = _hub(project, *invoke)
        assert second.returncode == 0, second.stderr
        commits = _commits(db.with_name("runs.db-wal"))
    finally:
        reader.close()
    # one per burst of records (start, settings, model, environment, results, end); it was
    # one per param, metric, tag and artifact (27)
    assert 1 <= commits <= 8, commits
    runs = _hub(project, "runs", "list", "--json")
    assert runs.returncode == 0, runs.stderr
    shown = _hub(project, "runs", "show", "latest", "--json")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert record["status"] == "FINISHED"
    assert {"device", "$runtime", "model", "seed", "output"} <= set(record["params"])
    assert {"inference_ms", "session_create_ms"} <= set(record["metrics"])
    assert {"host", "python", "edgehub", "runtime"} <= set(record["environment"])
    names = {artifact["name"]: artifact for artifact in record["artifacts"]}
    assert {"input", "input_data", "output_file", "log"} <= set(names)
    stored = Path(names["input"]["path"])
    assert stored.parent.name == names["input"]["sha256"] == record["model_sha256"]


_LONG_RUN = textwrap.dedent(
    """
    import sys, time
    from edgehub.core import HubContext, hub_run

    @hub_run("CUSTOM", name="long")
    def long(ctx):
        with ctx.client.batch():
            ctx.client.log_params({"started": True, "size": 3})
            ctx.client.log_metric("first", 1.5)
        print("ready", flush=True)
        time.sleep(60)

    with HubContext(project_name="p", artifact_base_dir=sys.argv[1]) as ctx:
        long(ctx)
    """
)


def test_a_run_reads_running_with_its_records_and_killed_once_its_process_dies(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    proc = subprocess.Popen(_script(tmp_path, _LONG_RUN), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        running = _latest(store)
        assert running["status"] == "RUNNING"
        assert running["params"] == {"started": True, "size": 3}
        assert running["metrics"] == {"first": 1.5}
        listed = _hub(tmp_path, "runs", "list", EDGEHUB_STORE=str(store))
        assert listed.returncode == 0 and "RUNNING" in listed.stdout, listed.stderr
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    killed = _latest(store)
    assert killed["status"] == "KILLED"
    assert killed["params"] == {"started": True, "size": 3}


_FAILING_RUN = textwrap.dedent(
    """
    import sys
    from edgehub.core import HubContext, hub_run

    @hub_run("CUSTOM", name="fails")
    def fails(ctx):
        with ctx.client.batch():
            ctx.client.log_param("before", 1)
            raise ValueError("broken on purpose")

    with HubContext(project_name="p", artifact_base_dir=sys.argv[1]) as ctx:
        try:
            fails(ctx)
        except ValueError:
            pass
    """
)


def test_what_a_batch_logged_before_an_error_is_kept_and_the_run_reads_failed(
    tmp_path: Path,
) -> None:
    done = subprocess.run(_script(tmp_path, _FAILING_RUN), capture_output=True)
    assert done.returncode == 0, done.stderr
    record = _latest(tmp_path / "store")
    assert record["status"] == "FAILED"
    assert "broken on purpose" in str(record["error"])
    assert record["params"] == {"before": 1}
