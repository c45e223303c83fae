"""`hub exec eval --cluster`: a dataset split across the workers of a local Ray instance,
merged into one EVAL run whose figures are those of the same eval run here."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from test_eval_cli import SAMPLES, hub, project, runs  # noqa: F401  (project: a fixture)

pytest.importorskip("ray", reason="needs Ray (the [ray] extra: pip install 'edgehub[ray]')")

pytestmark = pytest.mark.docker

ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
EVAL = ("exec", "eval", "onnxruntime", "clf.onnx", "--labels", "labels.npz",
        "--set", "quantization=static", "--set", "calibration_data=ds", "--metric", "top1",
        "--goal", "cosine>=0.9", "--json")  # fmt: skip


def _eval(folder: Path, dataset: str, *extra: str) -> dict[str, object]:
    done = hub(*EVAL, "--dataset", dataset, *extra, cwd=folder, env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _same(a: object, b: object) -> None:
    """Equal numbers within float tolerance, everything else exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-9)
    else:
        assert a == b


@pytest.mark.parametrize("stacked", [False, True], ids=["directory", "stacked"])
def test_eval_split_across_two_workers_has_the_local_figures(
    project: Path,  # noqa: F811
    stacked: bool,
) -> None:
    import numpy as np

    dataset = "ds"
    if stacked:
        files = sorted((project / "ds").glob("*.npz"))
        np.savez(project / "all.npz", x=np.stack([np.load(f)["x"] for f in files]))
        dataset = "all.npz"
    local = _eval(project, dataset)
    before = {r.run_id for r in runs(project) if r.run_type == "EVAL"}
    spread = _eval(project, dataset, "--cluster", "local:2")
    evals = [r for r in runs(project) if r.run_type == "EVAL" and r.run_id not in before]
    assert [r.run_id for r in evals] == [spread["run_id"]]  # one run, recorded once
    (run,) = evals
    assert run.status == "FINISHED" and run.params["cluster.shards"] == 2
    assert spread["samples"] == local["samples"] == SAMPLES
    for key in ("outputs", "tasks", "goals", "passed", "worst_samples", "per_sample"):
        _same(spread[key], local[key])
    assert spread["tasks"]["top1"]["model"] < 1.0  # type: ignore[index]  # int8, labels: real
    names = {k for k in run.metrics} | {"samples"}
    local_run = next(r for r in runs(project) if r.run_id == local["run_id"])
    assert names >= set(local_run.metrics)  # the metric names a local eval records


def test_layers_are_refused_with_cluster_in_one_line(project: Path) -> None:  # noqa: F811
    done = hub(*EVAL, "--dataset", "ds", "--layers", "--cluster", "local:2", cwd=project, env=ENV)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--layers" in lines[0] and "--cluster" in lines[0], done.stderr
    assert not [r for r in runs(project) if r.run_type in ("EVAL", "COMPILE")]


def test_cluster_out_of_reach_is_exit_3_before_the_compile(project: Path) -> None:  # noqa: F811
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (project / "hub.toml").write_text(
        (project / "hub.toml").read_text() + f'\n[cluster]\naddress = "ray://127.0.0.1:{port}"\n'
    )
    started = time.monotonic()
    done = hub(*EVAL, "--dataset", "ds", "--cluster", cwd=project, env={**ENV, **os.environ})
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port} is out of reach" in lines[0], done.stderr
    assert time.monotonic() - started < 30
    assert not [r for r in runs(project) if r.run_type in ("EVAL", "COMPILE")]
