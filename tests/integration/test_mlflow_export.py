"""`hub runs export RUN --to mlflow` through the real `hub` entry point, into a real MLflow file
store in a tmp dir, read back with MLflow's own client: a real profile run (ONNX Runtime image)
and its compile. Skipped where MLflow (the edgehub[mlflow] extra) is not installed.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker
mlflow = pytest.importorskip("mlflow", reason="needs MLflow: pip install 'edgehub[mlflow]'")

HUB = str(Path(sys.executable).with_name("hub"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
ENV = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"}


def hub(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=ENV)  # fmt: skip


def shown(root: Path, ref: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(hub(root, "runs", "show", ref, "--json").stdout)
    return data


def test_runs_export_to_mlflow_and_again(
    ort_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for it for file stores

    (tmp_path / "hub.toml").write_text('[project]\nname = "mlf"\nstore = ".hub"\n')
    (tmp_path / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    for args in (["compile", "onnxruntime", "tiny_cnn.onnx"],
                 ["profile", "onnxruntime", "--from-run", "latest:compile"]):  # fmt: skip
        done = hub(tmp_path, "exec", *args)
        assert done.returncode == 0, done.stderr
    profile, compiled = shown(tmp_path, "latest:profile"), shown(tmp_path, "latest:compile")
    uri = f"file:{tmp_path / 'mlruns'}"
    export = ["runs", "export", profile["run_id"][:8], compiled["run_id"][:8], "--to", "mlflow",
              "--tracking-uri", uri, "--experiment", "edge"]  # fmt: skip
    first = hub(tmp_path, *export)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("(created)") == 2
    again = hub(tmp_path, *export)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("(updated)") == 2 and "(created)" not in again.stdout

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("edge")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 2  # exported twice, still one MLflow run each
    (theirs,) = [r for r in runs if r.data.tags["edgehub.run_id"] == profile["run_id"]]
    run = client.get_run(theirs.info.run_id)
    for name in ("latency_median_ms", "latency_p90_ms", "latency_p99_ms", "fps"):
        assert run.data.metrics[name] == pytest.approx(profile["metrics"][name])
    assert run.data.metrics["latency"] == pytest.approx(profile["metrics"]["$latency"])
    assert run.data.params["runtime"] == "onnxruntime"
    assert run.data.params["option.runs"] == str(profile["params"]["option.runs"])
    tags = run.data.tags
    assert tags["device"] == "local" and tags["runtime"] == "onnxruntime"
    assert tags["image_digest"] == profile["environment"]["image_digest"]
    assert run.info.status == "FINISHED"
    listed = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"latency_samples_us.csv", "tables"} <= listed
    saved = client.download_artifacts(run.info.run_id, "latency_samples_us.csv", str(tmp_path))
    local = Path(saved)
    with local.open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["run", "latency_us"] and len(rows) - 1 == profile["params"]["runs"]
    layers = {a.path for a in client.list_artifacts(run.info.run_id, "tables")}
    assert "tables/layers.csv" in layers and "tables/stats.csv" in layers


def test_export_needs_a_target(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "mlf"\nstore = ".hub"\n')
    done = hub(tmp_path, "runs", "export", "latest", "--to", "mlflow", "-o", "x.tar")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    done = hub(tmp_path, "runs", "export", "latest")
    assert done.returncode == 2 and "--to mlflow" in done.stderr


def test_a_server_out_of_reach_fails_in_one_line(ort_image: str, tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "mlf"\nstore = ".hub"\n')
    (tmp_path / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    assert hub(tmp_path, "exec", "compile", "onnxruntime", "tiny_cnn.onnx").returncode == 0
    nowhere = "http://127.0.0.1:9"  # the discard port: nothing listens there
    done = hub(tmp_path, "runs", "export", "latest", "--to", "mlflow", "--tracking-uri", nowhere)
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--tracking-uri" in done.stderr
