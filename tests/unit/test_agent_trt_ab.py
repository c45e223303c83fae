"""``trt.ab`` without a GPU: what it does around the engines (each deserialised once, two
execution contexts per engine with their own buffers and streams, the shared round driver,
everything freed) and what it refuses.

`FakeTensorRT` and `FakeCuda` below stand in for the NVIDIA GPU, which this project's machines
do not have: the TensorRT bindings and the CUDA driver library. A fake "engine" file is JSON
naming its I/O and how long a run spins; ``execute_async_v3`` spins that long on the CPU.
Everything else is the agent's real code. The real engines are measured in
tests/integration/test_ab_tensorrt_gpu.py (marked gpu).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from edgehub.agent.protocol import ModelError, Params, RuntimeFailure, UsageError
from edgehub.agent.report import Report
from edgehub.agent.trt import ab
from edgehub.agent.trt.runtime import TensorRT


class FakeContext:
    """Stands in for an ``IExecutionContext`` on the GPU."""

    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.shapes: dict[str, list[int]] = {}
        self.addresses: dict[str, int] = {}

    def set_input_shape(self, name: str, shape: list[int]) -> None:
        self.shapes[name] = list(shape)

    def get_tensor_shape(self, name: str) -> list[int]:
        return self.shapes.get(name, self.engine.spec["tensors"][name])

    def set_tensor_address(self, name: str, pointer: int) -> None:
        self.addresses[name] = pointer

    def execute_async_v3(self, stream: int) -> bool:
        assert set(self.addresses) == set(self.engine.names), "every I/O tensor has a buffer"
        total = 0
        for i in range(self.engine.spec["spin"]):
            total += i
        self.engine.runs += 1
        return True


class FakeEngine:
    """Stands in for an ``ICudaEngine``: I/O from the JSON "engine" file."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.names = list(spec["tensors"])
        self.contexts: list[FakeContext] = []
        self.runs = 0

    @property
    def num_io_tensors(self) -> int:
        return len(self.names)

    def get_tensor_name(self, index: int) -> str:
        return self.names[index]

    def get_tensor_mode(self, name: str) -> Any:
        return SimpleNamespace(name="INPUT" if name in self.spec["inputs"] else "OUTPUT")

    def get_tensor_dtype(self, name: str) -> str:
        return "float32"

    def get_tensor_shape(self, name: str) -> list[int]:
        return list(self.spec["tensors"][name])

    def get_tensor_profile_shape(self, name: str, profile: int) -> list[list[int]]:
        opt = self.spec["opt"][name]
        return [opt, opt, opt]

    def create_execution_context(self) -> FakeContext:
        self.contexts.append(FakeContext(self))
        return self.contexts[-1]


class FakeTensorRT:
    """Stands in for the ``tensorrt`` module (the GPU's runtime)."""

    def __init__(self) -> None:
        self.engines: list[FakeEngine] = []
        module = self

        class Logger:
            WARNING = 2

            def __init__(self, level: int) -> None:
                self.level = level

        class Runtime:
            def __init__(self, logger: Any) -> None:
                self.logger = logger

            def deserialize_cuda_engine(self, data: bytes) -> FakeEngine | None:
                try:
                    engine = FakeEngine(json.loads(data))
                except ValueError:
                    return None
                module.engines.append(engine)
                return engine

        self.Logger = Logger
        self.Runtime = Runtime

    @staticmethod
    def nptype(dtype: str) -> Any:
        return np.dtype(dtype).type


class FakeCuda:
    """Stands in for the GPU's CUDA driver context: device memory and streams, counted."""

    def __init__(self) -> None:
        self.live: set[int] = set()
        self.streams: set[int] = set()
        self.uploads: list[tuple[int, tuple[int, ...]]] = []
        self._next = 4096
        self.closed = False

    def malloc(self, size: int) -> int:
        self._next += 4096
        self.live.add(self._next)
        return self._next

    def free(self, pointer: int) -> None:
        self.live.remove(pointer)

    def upload(self, pointer: int, array: Any) -> None:
        assert pointer in self.live
        self.uploads.append((pointer, tuple(array.shape)))

    def new_stream(self) -> int:
        handle = 7 + len(self.streams)
        self.streams.add(handle)
        return handle

    def synchronize(self, stream: int) -> None:
        assert stream in self.streams

    def destroy_stream(self, stream: int) -> None:
        self.streams.remove(stream)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeTensorRT, FakeCuda]:
    trt, cuda = FakeTensorRT(), FakeCuda()
    monkeypatch.setattr(ab, "gpu_visible", lambda: True)
    monkeypatch.setattr(ab, "import_tensorrt", lambda: TensorRT(trt, "full", "10.4-fake"))
    monkeypatch.setattr(ab, "open_cuda", lambda: cuda)
    return trt, cuda


def engine(path: Path, spin: int) -> Path:
    """A fake engine: input x of a dynamic batch (profile optimum 1x4), output y."""
    spec = {
        "inputs": ["x"],
        "tensors": {"x": [-1, 4], "y": [1, 4]},
        "opt": {"x": [1, 4]},
        "spin": spin,
    }
    path.write_text(json.dumps(spec))
    return path


def run_ab(a: Path, b: Path, out: Path, **extra: Any) -> tuple[Any, str]:
    request = {
        "model_a": str(a),
        "model_b": str(b),
        "rounds": 10,
        "block_ms": 3,
        "warmup": 2,
        "seed": 3,
        "profile_json_a": str(out / "a.json"),
        "profile_json_b": str(out / "b.json"),
        **extra,
    }
    log = io.StringIO()
    return ab.run(Params(request, "trt.ab"), Report(log)), log.getvalue()


def test_engines_load_once_and_every_buffer_is_freed(
    gpu: tuple[FakeTensorRT, FakeCuda], tmp_path: Path
) -> None:
    trt, cuda = gpu
    a = engine(tmp_path / "a.trt", 3000)
    result, log = run_ab(a, engine(tmp_path / "b.trt", 3000), tmp_path)
    assert len(trt.engines) == 2  # each deserialised once
    assert not cuda.live and not cuda.streams and cuda.closed  # all freed
    assert not cuda.live and not cuda.streams  # all freed
    assert len(cuda.uploads) == 4 and {shape for _, shape in cuda.uploads} == {(1, 4)}
    assert "2 execution contexts per engine" in log
    rounds = result.data["rounds"]
    assert [r["set"] for r in rounds] == [0, 1] * 5 and len(rounds) == 10
    assert result.params["shapes_a"] == {"x": [1, 4]}  # the profile's optimum
    for side in ("a", "b"):
        document = json.loads((tmp_path / f"{side}.json").read_text())
        runs = result.data["runs_per_block"][side]
        assert len(document["samples_us"]) == 10 * runs
        assert result.metrics[f"{side}_session_create_ms"] >= 0


def test_twice_the_work_shows_in_the_ratio(
    gpu: tuple[FakeTensorRT, FakeCuda], tmp_path: Path
) -> None:
    a = engine(tmp_path / "a.trt", 4000)
    b = engine(tmp_path / "b.engine", 8000)
    result, _ = run_ab(a, b, tmp_path, input_shape=[2, 4])
    ratios = sorted(r["ratio"] for r in result.data["rounds"])
    assert ratios[len(ratios) // 2] > 1.3  # median B/A, with a margin for a loaded machine
    assert result.params["shapes_b"] == {"x": [2, 4]}


def test_refusals(gpu: tuple[FakeTensorRT, FakeCuda], tmp_path: Path) -> None:
    a = engine(tmp_path / "a.trt", 10)
    with pytest.raises(UsageError, match="input_shape names z"):
        run_ab(a, a, tmp_path, input_shape={"z": [1, 4]})
    broken = tmp_path / "broken.trt"
    broken.write_bytes(b"\x00 not an engine")
    with pytest.raises(ModelError, match=r"engine B \(broken.trt\) cannot be opened"):
        run_ab(a, broken, tmp_path)
    with pytest.raises(UsageError, match="ONNX model, not a TensorRT engine"):
        run_ab(a, tmp_path / "m.onnx", tmp_path)
    cuda = gpu[1]
    allocated = cuda.malloc

    def out_of_memory_at_the_fifth(size: int) -> int:
        if len(cuda.live) == 4:
            raise RuntimeFailure("CUDA cuMemAlloc_v2 failed: out of memory")
        return allocated(size)

    cuda.malloc = out_of_memory_at_the_fifth  # type: ignore[method-assign]
    with pytest.raises(RuntimeFailure, match="out of memory"):
        run_ab(a, a, tmp_path)
    assert not cuda.live and not cuda.streams  # the contexts made so far were freed


def test_without_a_gpu_nothing_is_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ab, "gpu_visible", lambda: False)
    loaded: list[str] = []
    monkeypatch.setattr(ab, "import_tensorrt", lambda: loaded.append("trt"))
    a = engine(tmp_path / "a.trt", 10)
    with pytest.raises(UsageError, match="needs an NVIDIA GPU"):
        run_ab(a, a, tmp_path)
    assert loaded == []


def test_a_missing_cuda_runtime_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgehub.agent.protocol import MissingDependencyError
    from edgehub.agent.trt import cuda

    monkeypatch.setattr(cuda, "LIBRARY", "libcuda-not-here.so.0")
    with pytest.raises(MissingDependencyError, match=r"CUDA driver.*GPU passed through"):
        cuda.Cuda()
