"""TensorRT eval without a GPU: which layers a repair keeps in float (read from a build's layer
info), the runs' fields sent to ``trt.batch``, the refusals before anything runs, and the
agent command's checks of a request. Running an engine needs an NVIDIA GPU: that part is in
tests/integration/test_eval_tensorrt_gpu.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgehub.agent.protocol import UsageError as AgentUsageError
from edgehub.core.runtimes import get_runtime
from edgehub.errors import UsageError
from edgehub.ops.eval.fix import check_fix
from edgehub.ops.eval.layers import LayerSearch, layer_rows, qdq_match
from edgehub.ops.eval.run import EvalRequest
from edgehub.toolchains.tensorrt.batch import build_settings
from edgehub.toolchains.tensorrt.precision import float_layers, layer_nodes
from edgehub.tracking.run_log import LoggedParam


def _t(name: str, dtype: str = "FLOAT") -> dict[str, Any]:
    return {"name": name, "shape": [1, 8, 8, 8], "dtype": dtype}


def _layer(name: str, kind: str, inputs: list[str], outputs: list[str], node: str | None = None):
    return {
        "name": name,
        "type": kind,
        "metadata": f"[ONNX Layer: {node or name}]" if kind != "CONSTANT" else None,
        "inputs": [_t(n) for n in inputs],
        "outputs": [_t(n) for n in outputs],
    }


# conv3 of a QDQ network (its weights: an int8 constant dequantized), conv4 with float weights
# (kept in float: no Q/DQ around it), and relu4 under another layer name
LAYERS = [
    _layer("W3_quantized", "CONSTANT", [], ["W3_q"]),
    _layer("W3_DequantizeLinear", "DEQUANTIZE", ["W3_q"], ["W3_dq"]),
    _layer("s2_DequantizeLinear", "DEQUANTIZE", ["s2_q"], ["s2_dq"]),
    _layer("conv3", "CONVOLUTION", ["s2_dq", "W3_dq"], ["s3"]),
    _layer("conv4", "CONVOLUTION", ["s3"], ["c4"]),
    _layer("(Unnamed Layer* 7) [Activation]", "ACTIVATION", ["c4"], ["s4"], node="relu4"),
]


def test_nodes_kept_in_float_are_found_by_name_or_metadata_and_checked() -> None:
    found = float_layers(LAYERS, ["conv4", "relu4"])
    assert found.layers == {"conv4": ["conv4"], "relu4": ["(Unnamed Layer* 7) [Activation]"]}
    assert found.problems == []  # a dequantized activation input is no quantized weight
    assert layer_nodes(LAYERS[-1]) == {"(Unnamed Layer* 7) [Activation]", "relu4"}


def test_a_kept_node_that_still_reads_int8_weights_or_has_no_layer_is_named() -> None:
    found = float_layers(LAYERS, ["conv3", "gone"])
    assert found.layers == {"conv3": ["conv3"], "gone": []}
    assert found.problems == [
        "node 'conv3' kept in float still reads quantized weights in layer(s) conv3, which "
        "TensorRT may run in int8",
        "node 'gone' kept in float has no layer in TensorRT's network (folded or renamed by its "
        "ONNX parser); the layers around it decide its precision",
    ]


def test_build_settings_come_from_the_compile_run() -> None:
    class Log:
        params = {
            "precision": LoggedParam("precision", "int8"),
            "shapes": LoggedParam("shapes", {"x": {"min": [1], "opt": [1], "max": [1]}}),
            "target": LoggedParam("target", "sm86"),  # the probe builds for the GPU present
        }

    assert build_settings(Log()) == {  # type: ignore[arg-type]
        "precision": "int8",
        "shapes": {"x": {"min": [1], "opt": [1], "max": [1]}},
    }
    assert build_settings(None) == {"precision": "fp32"}


def _fix(**options: Any) -> EvalRequest:
    return EvalRequest("tensorrt", Path("ds"), model=Path("m.onnx"), goals=["cosine>=0.99"],
                       fix=3, options=options)  # fmt: skip


@pytest.mark.parametrize(
    "options",
    [{}, {"precision": "int8"}, {"calibration_data": "ds"}, {"precision": "fp16"}],
)
def test_fix_needs_an_int8_engine_quantized_here(options: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="give --set precision=int8 --set calibration_data=DIR"):
        check_fix(_fix(**options), get_runtime("tensorrt"))


def test_fix_of_a_tensorrt_engine_compares_with_its_fp32_build() -> None:
    check_fix(_fix(precision="int8", calibration_data="ds", target="sm86"), get_runtime("tensorrt"))
    precision = get_runtime("tensorrt").repair
    assert precision is not None
    assert (precision.key, precision.float_value) == ("precision", "fp32")
    assert "calibration_data" in precision.quantized_only


def test_probes_that_change_the_engine_fusions_are_listed() -> None:
    reference = [
        {"name": f"n{i}", "op": "Conv", "inputs": [f"t{i}"], "outputs": [f"t{i + 1}"]}
        for i in range(4)
    ]
    compiled = [{"outputs": [f"t{i + 1}_DequantizeLinear_Output"]} for i in range(4)]
    rows = layer_rows(reference, qdq_match(compiled))

    def probe(marks: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        import numpy as np

        ones = np.ones((1, 1, 2, 3))
        model = {m: ones * (2.0 if marks[m] in ("t3", "t4") else 1.0) for m in marks}
        return model, {r: ones for r in marks.values()}

    search = LayerSearch(rows, 0.2, probe)
    search.unfused.append({"tensors": ["t3_DequantizeLinear_Output"], "engine": 4, "probe": 5})
    first = search.first_divergent()
    assert first is not None and first.node == "n2"
    report = search.to_dict(first, 1)
    assert report["fusion_changed"] == [
        {"tensors": ["t3_DequantizeLinear_Output"], "engine": 4, "probe": 5}
    ]
    assert "fusion_changed" not in LayerSearch(rows, 0.2, probe).to_dict(None, 1)


def test_the_agent_checks_each_run_before_touching_the_gpu() -> None:
    from edgehub.agent.trt.batch import _job

    raw = {"model": "in/m.trt", "output": "out/o.npz", "source": "in/m.onnx",
           "build": {"precision": "int8", "shapes": None}, "extra_outputs": ["a"]}  # fmt: skip
    job = _job(raw, 0)
    assert (job["source"], job["build"]["precision"], job["extra"]) == ("in/m.onnx", "int8", ["a"])
    with pytest.raises(AgentUsageError, match="'build' must be"):
        _job({"model": "in/m.trt", "output": "out/o.npz", "build": {"precision": "int4"}}, 1)
    with pytest.raises(AgentUsageError, match="unknown"):
        _job({"model": "in/m.trt", "output": "out/o.npz", "extras": ["a"]}, 2)


class _FakeGpu:
    """Stands in for an NVIDIA GPU (none here) under `EngineRunner`: `Cuda`'s buffers are host
    arrays by address, and the "engine" doubles its input into its output."""

    def __init__(self) -> None:
        import numpy as np

        self.memory: dict[int, Any] = {}
        self.np = np
        self.stream = 7

    def buffer(self, name: str, nbytes: int) -> int:
        address = 1000 + sum(map(ord, name))
        self.memory.setdefault(address, self.np.zeros(nbytes, self.np.uint8))
        return address

    def upload(self, address: int, array: Any) -> None:
        self.memory[address][: array.nbytes] = array.reshape(-1).view(self.np.uint8)

    def download(self, array: Any, address: int) -> None:
        array.reshape(-1).view(self.np.uint8)[:] = self.memory[address][: array.nbytes]

    def synchronize(self) -> None:
        pass

    def engine(self) -> Any:
        gpu, np = self, self.np

        class Context:
            def __init__(self) -> None:
                self.shapes: dict[str, tuple[int, ...]] = {}
                self.addresses: dict[str, int] = {}

            def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
                self.shapes[name] = shape

            def get_tensor_shape(self, name: str) -> tuple[int, ...]:
                return self.shapes["x"]

            def set_tensor_address(self, name: str, address: int) -> None:
                self.addresses[name] = address

            def execute_async_v3(self, stream: int) -> bool:
                assert stream == gpu.stream
                size = int(np.prod(self.shapes["x"])) * 4
                x = gpu.memory[self.addresses["x"]][:size].view(np.float32)
                gpu.memory[self.addresses["y"]][:size] = (x * 2).view(np.uint8)
                return True

        class Engine:
            num_io_tensors, num_layers = 2, 3

            def get_tensor_name(self, index: int) -> str:
                return "xy"[index]

            def get_tensor_mode(self, name: str) -> str:
                return "INPUT" if name == "x" else "OUTPUT"

            def get_tensor_dtype(self, name: str) -> Any:
                return np.float32

            def get_tensor_shape(self, name: str) -> list[int]:
                return [-1, 3]

            def create_execution_context(self) -> Context:
                return Context()

        return Engine()


def test_the_engine_runner_stacks_each_samples_outputs() -> None:
    import numpy as np

    from edgehub.agent.trt.engine_run import EngineRunner
    from edgehub.agent.trt.runtime import TensorRT

    gpu = _FakeGpu()

    class Module:
        class TensorIOMode:
            INPUT = "INPUT"

        @staticmethod
        def nptype(dtype: Any) -> Any:
            return dtype

        class Runtime:
            def __init__(self, logger: Any) -> None:
                pass

            def deserialize_cuda_engine(self, blob: bytes) -> Any:
                return gpu.engine()

    runner = EngineRunner(TensorRT(Module, "rtx", "1.7"), None, b"plan", "m.trt")
    assert (runner.inputs, runner.outputs, runner.num_layers) == (["x"], ["y"], 3)
    assert runner.specs[0].shape == [None, 3]
    samples = [{"x": np.full((2, 3), i, np.float32)} for i in range(3)]
    outputs, elapsed = runner.run_all(gpu, samples)  # type: ignore[arg-type]
    assert outputs["y"].shape == (3, 2, 3) and elapsed > 0
    assert [float(outputs["y"][i].max()) for i in range(3)] == [0.0, 2.0, 4.0]
