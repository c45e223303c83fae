"""A store written by the release before the schema version (tests/data/store-v1) opens and
reads correctly after the migration to schema 2, in place or read-only."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from edgehub.errors import StorageError
from edgehub.tracking import RunStore
from edgehub.tracking import store as store_module
from edgehub.tracking.artifacts import hash_path
from edgehub.tracking.profile_compare import compare_profiles
from edgehub.tracking.schema import SCHEMA_VERSION

FIXTURE = Path(__file__).parents[1] / "data" / "store-v1"
TINY_CNN_SHA = hash_path(Path(__file__).parents[2] / "examples" / "tiny_cnn.onnx")


@pytest.fixture
def v1_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture, moved elsewhere (its recorded paths point to /tmp/storefix)."""
    monkeypatch.setattr(store_module, "HOSTNAME", "edgehub-fixture-host")
    target = tmp_path / "moved" / ".hub"
    shutil.copytree(FIXTURE, target)
    return target


def _by_name(store: RunStore) -> dict[tuple[str, str], list]:  # type: ignore[type-arg]
    found: dict[tuple[str, str], list] = {}  # type: ignore[type-arg]
    for run in store.list_runs(limit=None):
        found.setdefault((run.run_type, run.status), []).append(run)
    return found


def test_v1_store_migrates_in_place_and_reads_every_field(v1_store: Path) -> None:
    store = RunStore(v1_store)
    version = sqlite3.connect(v1_store / "runs.db").execute("PRAGMA user_version").fetchone()
    assert version == (SCHEMA_VERSION,)
    runs = _by_name(store)
    assert sorted((t, s, len(v)) for (t, s), v in runs.items()) == [
        ("COMPILE", "FINISHED", 1),
        ("CUSTOM", "FINISHED", 1),
        ("CUSTOM", "KILLED", 1),  # left RUNNING by a SIGKILLed process: recorded KILLED now
        ("EVAL", "FINISHED", 1),
        ("INFERENCE", "FINISHED", 1),
        ("PROFILE", "FAILED", 1),
        ("PROFILE", "FINISHED", 2),
    ]
    (compiled,) = runs["COMPILE", "FINISHED"]
    assert compiled.params["option.quantization"] == "dynamic"
    assert (compiled.device, compiled.runtime) == ("local", "onnxruntime")
    assert compiled.model_sha256 == TINY_CNN_SHA == compiled.artifacts["input"].sha256
    model = compiled.artifacts["path"].local()
    assert model.is_relative_to(v1_store) and hash_path(model) == model.parent.name
    assert compiled.artifact_dir is not None and compiled.artifact_dir.parent == v1_store / "runs"
    assert compiled.metrics and compiled.environment["image_digest"].startswith("sha256:")
    profiles = runs["PROFILE", "FINISHED"]
    assert {p.parent_run_id for p in profiles} == {compiled.run_id, None}
    (evaluation,) = runs["EVAL", "FINISHED"]
    assert evaluation.params["thresholds"] == [0.5, 0.9]
    assert evaluation.params["extra"] == {"a": 1}
    assert [(m.step, m.value) for m in evaluation.metric_history["top1"]] == [
        (0, 0.5),
        (1, 0.7),
        (2, 0.81),
    ]
    assert evaluation.tags == {"team": "vision", "ci": "yes", "stage": "nightly"}
    assert evaluation.artifacts["report"].local().read_text() == "top1=0.81\n"
    (child,) = runs["CUSTOM", "FINISHED"]
    assert child.parent_run_id == evaluation.run_id and child.environment["gpu"] == "none"
    (killed,) = runs["CUSTOM", "KILLED"]
    assert killed.params == {"note": "killed with SIGKILL"}
    log = store.run_log(compiled.run_id[:6])
    assert log.parent_run_id is None and log.artifacts["path"].local() == model


def test_v1_store_filters_in_sql(v1_store: Path) -> None:
    store = RunStore(v1_store)
    assert len(store.list_runs(run_type="profile", limit=None)) == 3
    assert [r.name for r in store.list_runs(status="failed")] == ["ONNXRuntimeProfiler"]
    assert len(store.list_runs(runtime="onnxruntime", limit=None)) == 5
    assert len(store.list_runs(device="local", limit=None)) == 5
    by_model = store.list_runs(model_sha256=TINY_CNN_SHA[:10], limit=None)
    assert sorted(r.run_type for r in by_model) == ["COMPILE", "PROFILE"]
    newest_two = store.list_runs(limit=2)
    assert [r.name for r in newest_two] == ["hangs", "child step"]
    assert [r.name for r in store.list_runs(limit=1, offset=1)] == ["child step"]
    assert store.resolve_id("latest:compile") == store.list_runs(run_type="COMPILE")[0].run_id


def test_v1_store_reads_read_only_without_changing_a_byte(v1_store: Path) -> None:
    before = hashlib.sha256((v1_store / "runs.db").read_bytes()).hexdigest()
    store = RunStore(v1_store, read_only=True)
    runs = store.list_runs(limit=None)
    assert len(runs) == 8 and not store.writable
    assert {r.status for r in runs if r.name == "hangs"} == {"KILLED"}
    with pytest.raises(StorageError, match="the store was opened read-only"):
        store.log_tag(runs[0].run_id, "x", "y")
    store.close()
    assert hashlib.sha256((v1_store / "runs.db").read_bytes()).hexdigest() == before
    version = sqlite3.connect(v1_store / "runs.db").execute("PRAGMA user_version").fetchone()
    assert version == (0,)  # migrated in memory only


def test_two_profile_runs_of_the_fixture_compare(v1_store: Path) -> None:
    store = RunStore(v1_store)
    first, second = store.list_runs(run_type="PROFILE", status="FINISHED")
    result = compare_profiles(second, first)
    assert result.samples_a == result.samples_b == 300
    assert result.median.a_ms > 0 and result.p99.b_ms >= result.median.b_ms


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    RunStore(tmp_path).close()
    sqlite3.connect(tmp_path / "runs.db").execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageError, match="newer than this edgehub reads"):
        RunStore(tmp_path)
