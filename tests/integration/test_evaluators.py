"""The `Evaluator` components of the Python API (`edgehub.core.evaluate`), shaped like the
invokers: a compiled model scored on a dataset in the real ONNX Runtime image, one EVAL run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.core.context import HubContext
from edgehub.errors import InputDataError, UsageError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from unit.agent_models import make_cnn

pytestmark = [pytest.mark.docker]


def test_onnxruntime_evaluator_scores_a_compiled_model_on_a_dataset(
    tmp_path: Path, ort_image: str
) -> None:
    from edgehub.core.compile import ONNXRuntimeCompiler
    from edgehub.core.evaluate import EvaluationResult, ONNXRuntimeEvaluator, TFLiteEvaluator

    model = make_cnn(tmp_path / "cnn.onnx")
    rng = np.random.default_rng(5)
    images = rng.standard_normal((6, 1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "ds.npz", image=images)
    (tmp_path / "labels.json").write_text("[0, 1, 2, 3, 4, 5]")
    with HubContext("evaluators", artifact_base_dir=tmp_path / "store") as ctx:
        compiled = ONNXRuntimeCompiler(quantization="none").run(ctx, model)
        result = ONNXRuntimeEvaluator(metrics=["top1"], worst=2).run(
            ctx, compiled, tmp_path / "ds.npz", labels=tmp_path / "labels.json"
        )
        with pytest.raises(UsageError, match="unknown metric 'top9'"):
            ONNXRuntimeEvaluator(metrics=["top9"]).run(ctx, compiled, tmp_path / "ds.npz")
        np.savez(tmp_path / "bad.npz", image=images.astype(np.float64))
        with pytest.raises(InputDataError, match="float"):
            ONNXRuntimeEvaluator().run(ctx, compiled, tmp_path / "bad.npz")
    assert isinstance(result, EvaluationResult) and result.samples == 6
    assert result.outputs["logits"]["cosine"] > 0.99999  # optimized float32 vs the original
    assert len(result.worst["logits"]) == 2
    top1 = result.tasks["top1"]
    assert top1["against"] == "labels" and top1["model"] == top1["reference"]
    outputs = np.load(str(result.output_file.local()))
    assert outputs["logits"].shape == (6, 1, 10)
    assert result.run_log is not None and result.run_log.run_type == "EVAL"
    assert TFLiteEvaluator.providers() == ["local", "ssh", "qai_hub"]


def test_pipeline_with_a_dataset_ends_with_an_eval(tmp_path: Path, ort_image: str) -> None:
    import json
    import os
    import subprocess

    hub = str(Path(sys.executable).with_name("hub"))
    env = {**os.environ, "HOME": str(tmp_path)}
    (tmp_path / "hub.toml").write_text('[project]\nname = "pipe-eval"\n')
    make_cnn(tmp_path / "cnn.onnx")
    images = np.random.default_rng(6).standard_normal((4, 1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "ds.npz", image=images)
    (tmp_path / "labels.json").write_text("[1, 2, 3, 4]")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([hub, "exec", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    wrong = run("profile", "onnxruntime", "cnn.onnx", "--dataset", "ds.npz")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines()[-1] == (
        "hub: error: hub exec profile: unrecognized arguments: --dataset ds.npz; --dataset is "
        "for hub exec pipeline, eval; see 'hub exec profile --help'"
    )
    done = run("pipeline", "onnxruntime", "cnn.onnx", "--set", "compile.quantization=none",
               "--set", "profile.runs=5", "--dataset", "ds.npz", "--labels", "labels.json",
               "--metric", "top1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["eval"]["type"] == "EVAL"
    assert report["eval"]["metrics"]["samples"] == 4.0
    assert report["eval"]["metrics"]["logits.cosine"] > 0.99999
    assert report["eval"]["metrics"]["top1"] == report["eval"]["metrics"]["reference.top1"]
    text = run("pipeline", "onnxruntime", "cnn.onnx", "--set", "compile.quantization=none",
               "--set", "profile.runs=5", "--dataset", "ds.npz")  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "eval: run" in text.stdout and "logits.cosine" in text.stdout
