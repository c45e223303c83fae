"""ort.ab through the built zipapp (ONNX Runtime on this host): the block order comes from the
seed, the session sets alternate, each model's samples land in its own profile document, and a
missing model is a user error."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import make_cnn, make_two_input, run_agent

from edgehub.agent.bundle import build_agent_zipapp

pytest.importorskip("onnxruntime", reason="needs onnxruntime on this host (pip install -e .[dev])")


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


def _ab(pyz: Path, root: Path, a: Path, b: Path, seed: int) -> dict[str, object]:
    out = Path(tempfile.mkdtemp(prefix=f"out-{seed}-", dir=root))  # one per call
    request = {
        "model_a": str(a),
        "model_b": str(b),
        "rounds": 8,
        "block_ms": 2,
        "warmup": 2,
        "seed": seed,
        "intra_op_threads": 1,
        "profile_json_a": str(out / "a.json"),
        "profile_json_b": str(out / "b.json"),
    }
    run = run_agent(pyz, "ort.ab", request, root / "runs")
    assert run.returncode == 0, run.stderr
    return {"data": run.data, "metrics": run.metrics, "out": out}


def test_rounds_follow_the_seed_and_alternate_session_sets(pyz: Path, tmp_path: Path) -> None:
    a = make_cnn(tmp_path / "a.onnx")
    b = make_two_input(tmp_path / "b.onnx")  # other inputs: each model gets its own
    first = _ab(pyz, tmp_path, a, b, seed=11)
    again = _ab(pyz, tmp_path, a, b, seed=11)
    other = _ab(pyz, tmp_path, a, b, seed=12)
    rounds = first["data"]["rounds"]  # type: ignore[index]
    orders = [r["order"] for r in rounds]
    assert orders == [r["order"] for r in again["data"]["rounds"]]  # type: ignore[index]
    other_orders = [r["order"] for r in other["data"]["rounds"]]  # type: ignore[index]
    assert set(orders) <= {"AB", "BA"} and orders != other_orders
    assert [r["set"] for r in rounds] == [0, 1] * 4
    for row in rounds:
        assert row["ratio"] == pytest.approx(row["b_ms"] / row["a_ms"], rel=1e-3)
    per_block = first["data"]["runs_per_block"]  # type: ignore[index]
    assert per_block["a"] >= 3 and per_block["b"] >= 3
    out: Path = first["out"]  # type: ignore[assignment]
    for side in ("a", "b"):
        document = json.loads((out / f"{side}.json").read_text())
        assert len(document["samples_us"]) == 8 * per_block[side]
        assert document["settings"]["side"] == side.upper()
        assert first["metrics"][f"{side}_runs"] == 8 * per_block[side]  # type: ignore[index]


def test_a_missing_model_is_a_user_error(pyz: Path, tmp_path: Path) -> None:
    a = make_cnn(tmp_path / "a.onnx")
    request = {"model_a": str(a), "model_b": str(tmp_path / "gone.onnx"), "rounds": 6}
    run = run_agent(pyz, "ort.ab", request, tmp_path / "runs")
    assert run.returncode == 2
    assert "gone.onnx" in run.message
