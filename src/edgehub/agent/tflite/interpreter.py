"""Loading ``.tflite`` models in the LiteRT interpreter, and reading their inputs and outputs.

The interpreter comes from ``ai_edge_litert`` (else the older ``tflite_runtime``, else
``tensorflow.lite``). XNNPACK is LiteRT's default CPU delegate; ``xnnpack=False`` loads the
model with the builtin kernels only (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol import MissingDependencyError, ModelError, one_line
from ..tensors import TensorSpec

# The file identifier of a TFLite flatbuffer (bytes 4..8).
TFLITE_MAGIC = b"TFL3"
INTERPRETER_MODULES = ("ai_edge_litert.interpreter", "tflite_runtime.interpreter")
VERSION_DISTRIBUTIONS = ("ai-edge-litert", "onnx2tf", "tensorflow", "onnx", "onnxruntime")


def import_interpreter() -> Any:
    """The module that provides ``Interpreter`` and ``OpResolverType``."""
    errors = []
    for name in INTERPRETER_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
    try:
        return importlib.import_module("tensorflow").lite
    except ImportError as exc:
        errors.append(f"tensorflow: {exc}")
    raise MissingDependencyError(
        "no TFLite interpreter can be imported here ("
        + "; ".join(errors)
        + "): install ai-edge-litert (pip install ai-edge-litert)"
    )


def toolchain_versions() -> dict[str, str | None]:
    """Installed versions of the TFLite toolchain's packages (imports nothing)."""
    from ..env import dist_version

    return {name.replace("-", "_"): dist_version(name) for name in VERSION_DISTRIBUTIONS}


def is_tflite_file(path: Path) -> bool:
    try:
        with open(str(path), "rb") as fh:
            head = fh.read(8)
    except OSError:
        return False
    return head[4:8] == TFLITE_MAGIC


def resolve_tflite_path(path_arg: str, component: str = "TFLiteProfiler/TFLiteInvoker") -> Path:
    """The ``.tflite`` file ``path_arg``; an ONNX model or another file is a clear ModelError."""
    path = Path(path_arg)
    if not path.is_file():
        raise ModelError(f"model '{path_arg}' does not exist: check the path")
    if is_tflite_file(path):
        return path
    if path.suffix.lower() == ".onnx":
        raise ModelError(
            f"'{path.name}' is an ONNX model, but {component} takes a .tflite model: convert it "
            "with TFLiteCompiler first (or run it with the ONNX Runtime components)"
        )
    raise ModelError(
        f"'{path.name}' is not a TFLite model (no TFL3 flatbuffer identifier): pass a .tflite file"
    )


def load_interpreter(path: Path, threads: int | None = None, xnnpack: bool = True) -> Any:
    """An interpreter for ``path`` with its tensors allocated."""
    module = import_interpreter()
    kwargs: dict[str, Any] = {"model_path": str(path), "num_threads": threads}
    if not xnnpack:
        kwargs["experimental_op_resolver_type"] = (
            module.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        )
    try:
        interpreter = module.Interpreter(**kwargs)
        interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        flex = flex_ops(path)
        if flex:
            raise ModelError(
                f"'{path.name}' uses TensorFlow ops that LiteRT has no builtin for "
                f"({', '.join(flex)}), which this interpreter cannot run (it has no Flex "
                "delegate): re-export the model without them (e.g. GELU in its tanh form, "
                "no Einsum), or run it with the ONNX Runtime components"
            ) from exc
        raise ModelError(
            f"the LiteRT interpreter cannot load '{path.name}': {one_line(str(exc))}"
        ) from exc
    return interpreter


def flex_ops(path: Path) -> list[str]:
    """The TensorFlow ops a .tflite model runs through the Flex delegate (custom ops named
    ``Flex<Op>``), read from the file's bytes; sorted, without the prefix."""
    import re

    try:
        data = path.read_bytes()
    except OSError:
        return []
    return sorted({name.decode() for name in re.findall(rb"Flex([A-Z][A-Za-z0-9]*)", data)})


@dataclass
class TFLiteTensor:
    """One input or output of a loaded model. ``name`` is the signature key when the model has
    exactly one signature, else the tensor name. ``scale``/``zero_point`` are set for
    per-tensor quantized tensors."""

    name: str
    index: int
    dtype: str
    shape: list[int]
    signature: list[int]
    scale: float = 0.0
    zero_point: int = 0

    @property
    def quantized(self) -> bool:
        return self.scale != 0.0 and self.dtype in ("int8", "uint8", "int16")

    def spec(self) -> TensorSpec:
        dims: list[Any] = [None if d < 0 else int(d) for d in self.signature]
        return TensorSpec(self.name, self.dtype, dims)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.spec().to_json()
        if self.quantized:
            data["quantization"] = {"scale": self.scale, "zero_point": self.zero_point}
        return data


def _tensor(name: str, detail: dict[str, Any]) -> TFLiteTensor:
    import numpy as np

    scale, zero_point = detail.get("quantization") or (0.0, 0)
    shape = [int(d) for d in detail["shape"]]
    signature = detail.get("shape_signature")
    signature = shape if signature is None else [int(d) for d in signature]
    dtype = np.dtype(detail["dtype"]).name
    return TFLiteTensor(
        name, int(detail["index"]), dtype, shape, signature, float(scale), int(zero_point)
    )


def io_tensors(interpreter: Any) -> tuple[list[TFLiteTensor], list[TFLiteTensor]]:
    """The model's inputs and outputs in the interpreter's order, named as the class says."""
    inputs = interpreter.get_input_details()
    outputs = interpreter.get_output_details()
    keys: dict[int, str] = {}
    signatures = interpreter.get_signature_list()
    if len(signatures) == 1:
        runner = interpreter.get_signature_runner(next(iter(signatures)))
        for details in (runner.get_input_details(), runner.get_output_details()):
            for key, detail in details.items():
                keys[int(detail["index"])] = str(key)
    return (
        [_tensor(keys.get(int(d["index"]), str(d["name"])), d) for d in inputs],
        [_tensor(keys.get(int(d["index"]), str(d["name"])), d) for d in outputs],
    )


def op_list(interpreter: Any) -> list[dict[str, Any]]:
    """The operators of the main subgraph (``index``, ``op_name``, ...) where LiteRT tells."""
    details = getattr(interpreter, "_get_ops_details", None)
    if details is None:
        return []
    try:
        return list(details())
    except Exception:
        return []
