"""Bundles of runs recorded through the real tracking API, moved with the real `hub runs export`
and `hub runs import`: one content logged under two names travels as both, a directory
artifact keeps its files, and params named like secrets are left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from edgehub.core import HubContext, hub_run
from edgehub.core.component import RunType

HUB = str(Path(sys.executable).with_name("hub"))


@hub_run(RunType.CUSTOM, name="child")
def child(ctx: HubContext, folder: Path) -> None:
    ctx.client.log_param("api_token", "s3cret-value")
    ctx.client.log_param("label", "kept")
    (ctx.artifact_dir / "a.bin").write_bytes(b"same bytes")
    (ctx.artifact_dir / "b.bin").write_bytes(b"same bytes")
    ctx.client.log_artifact(ctx.artifact_dir / "a.bin", name="first")
    ctx.client.log_artifact(ctx.artifact_dir / "b.bin", name="second")
    ctx.client.log_artifact(folder, name="folder")


@hub_run(RunType.CUSTOM, name="parent")
def parent(ctx: HubContext, folder: Path) -> None:
    ctx.client.log_metric("score", 0.5)
    child(ctx, folder)


def hub(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_bundle_of_api_runs_round_trips(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        root.mkdir()
        (root / "hub.toml").write_text(f'[project]\nname = "{root.name}"\nstore = ".hub"\n')
    folder = tmp_path / "outside" / "tree"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "x.txt").write_text("x")
    (folder / "y.txt").write_text("y")
    with HubContext(project_name="a", artifact_base_dir=a / ".hub") as ctx:
        parent(ctx, folder)
        runs = ctx.store.list_runs()
    ids = [r.run_id for r in runs]
    done = hub(a, "runs", "export", *ids, "-o", str(tmp_path / "r.tar.gz"))
    assert done.returncode == 0, done.stderr
    assert f"{len(ids)} runs" in done.stdout and "left out 1 entries" in done.stdout
    done = hub(b, "runs", "import", str(tmp_path / "r.tar.gz"))
    assert done.returncode == 0 and f"imported {len(ids)} runs" in done.stdout, done.stderr
    for run in runs:
        there = json.loads(hub(b, "runs", "show", run.run_id, "--json").stdout)
        here = json.loads(hub(a, "runs", "show", run.run_id, "--json").stdout)
        here["params"].pop("api_token", None)
        assert there["tags"].pop("imported_from").startswith("r.tar.gz, ")  # marked on import
        for record in (here, there):
            record.pop("artifact_dir")
            for artifact in record["artifacts"]:
                artifact["path"] = Path(artifact["path"]).name
        assert there == here
        stored = [x for x in there["artifacts"] if x["stored"]]
        assert all(x["file_size"] > 0 for x in stored)
    shown = [json.loads(hub(b, "runs", "show", i, "--json").stdout) for i in ids]
    child_there = next(r for r in shown if r["name"] == "child")
    names = {x["name"]: x for x in child_there["artifacts"]}
    assert Path(names["first"]["path"]).read_bytes() == Path(names["second"]["path"]).read_bytes()
    assert Path(names["second"]["path"]).name == "b.bin"
    assert (Path(names["folder"]["path"]) / "sub" / "x.txt").read_text() == "x"
    assert "api_token" not in child_there["params"] and child_there["params"]["label"] == "kept"
