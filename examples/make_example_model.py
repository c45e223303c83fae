"""Make `tiny_cnn.onnx`: a small image classifier (Conv-BN-ReLU x2, pool, Gemm, Softmax) with
deterministic random weights. Run: python examples/make_example_model.py [OUTPUT]"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def weight(name: str, *shape: int, scale: float = 0.2) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [
        weight("conv1_w", 8, 3, 3, 3),
        weight("conv1_b", 8, scale=0.05),
        weight("conv2_w", 16, 8, 3, 3, scale=0.1),
        weight("conv2_b", 16, scale=0.05),
        weight("fc_w", 10, 16, scale=0.3),
        weight("fc_b", 10, scale=0.05),
    ]
    nodes = [
        helper.make_node(
            "Conv",
            ["image", "conv1_w", "conv1_b"],
            ["c1"],
            name="conv1",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(
            "MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node(
            "Conv",
            ["p1", "conv2_w", "conv2_b"],
            ["c2"],
            name="conv2",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="edgehub-examples"
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("tiny_cnn.onnx")
    onnx.save(build(), out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
