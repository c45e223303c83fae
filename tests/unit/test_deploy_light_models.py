"""The onnx package's `light` models and the example model through `transform` with the
tensorrt backend: fewer or equal nodes, and outputs equal within 1e-5 (abs; the outputs are
softmax probabilities) on the ramp inputs ONNX's backend tests use. The light models store
every weight as one constant (ConstantOfShape), which makes all channels alike; the second test
gives a few of them random weights so folded BatchNorms and scales are really exercised."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from edgehub.deploy import reset_backends, set_backend, transform
from edgehub.deploy.compare import max_abs_difference, ramp_inputs, run

pytest.importorskip("edgehub_backend_tensorrt", reason="pip install -e backends/tensorrt")

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
EXAMPLE = Path(__file__).parents[2] / "examples" / "tiny_cnn.onnx"
MODELS = [*sorted(glob.glob(str(LIGHT / "*.onnx"))), str(EXAMPLE)]
TOLERANCE = 1e-5


@pytest.fixture(autouse=True)
def _tensorrt() -> Iterator[None]:
    reset_backends()
    set_backend("tensorrt")
    yield
    reset_backends()


@pytest.mark.parametrize("path", MODELS, ids=lambda p: os.path.basename(p)[:-5])
def test_light_model_keeps_outputs_and_does_not_grow(path: str) -> None:
    model = onnx.load(path)
    feeds = ramp_inputs(model)
    reference = Path(path[: -len(".onnx")] + "_output_0.pb")
    if reference.exists():  # our feeds are the ones the reference outputs were made with
        expected = numpy_helper.to_array(onnx.load_tensor(str(reference)))
        np.testing.assert_allclose(run(model, feeds)[0], expected, atol=TOLERANCE)
    out, report = transform(model)
    assert report.nodes_after <= report.nodes_before
    assert report.nodes_after == len(out.graph.node)
    assert max_abs_difference(model, out, feeds) <= TOLERANCE
    assert report.fired(), "some pattern should apply to every one of these CNNs"


def _random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """ConstantOfShape weights replaced by random initializers (1-D: in [0.5, 1.5])."""
    rng = np.random.default_rng(seed)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    kept = []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = [int(d) for d in inits[node.input[0]]]
            if len(shape) == 1:
                value = rng.uniform(0.5, 1.5, shape)
            else:
                value = rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))
            model.graph.initializer.append(
                numpy_helper.from_array(value.astype(np.float32), node.output[0])
            )
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return model


@pytest.mark.parametrize("name", ["light_shufflenet", "light_inception_v2", "light_densenet121"])
def test_light_model_with_random_weights_keeps_its_logits(name: str) -> None:
    model = _random_weights(onnx.load(str(LIGHT / f"{name}.onnx")))
    feeds = ramp_inputs(model)
    before = run(model, feeds)[0]
    assert before.std() > 1e-4  # the outputs now differ between classes
    out, report = transform(model)
    assert report.nodes_after < report.nodes_before
    difference = max_abs_difference(model, out, feeds)
    assert difference <= 1e-4 * max(1.0, float(np.abs(before).max())), difference
