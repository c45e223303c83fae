"""The edges of a TFLite model: feeding inputs and reading outputs in either naming.

With ``compiled_names=False`` inputs and outputs are keyed by the ONNX names in the ONNX layout
and dtype: arrays are transposed with the mapping's permutation, float inputs of quantized
tensors quantized (``round(x / scale) + zero_point``, clipped) and quantized outputs
dequantized. With ``compiled_names=True`` the TFLite names and layout are used (a float array
for a quantized input is still quantized) and outputs come as the model produced them.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..protocol import InputDataError, RuntimeFailure, one_line
from ..tensors import Arrays, TensorSpec, check_arrays
from .interpreter import TFLiteTensor, io_tensors
from .layout import IOMapping, TensorMap


def quantize(array: np.ndarray, tensor: TFLiteTensor) -> np.ndarray:
    info = np.iinfo(tensor.dtype)
    scaled = np.round(array.astype(np.float64) / tensor.scale) + tensor.zero_point
    clipped: np.ndarray = np.clip(scaled, info.min, info.max)
    return clipped.astype(tensor.dtype)


def dequantize(array: np.ndarray, tensor: TFLiteTensor) -> np.ndarray:
    shifted = array.astype(np.float32) - np.float32(tensor.zero_point)
    return np.asarray(shifted * np.float32(tensor.scale), dtype=np.float32)


def identity_mapping(inputs: list[TFLiteTensor], outputs: list[TFLiteTensor]) -> IOMapping:
    """The mapping of a model without a sidecar: TFLite names and layout; quantized tensors
    are float on the "original" side."""

    def entry(tensor: TFLiteTensor) -> TensorMap:
        dims: list[int] = list(tensor.signature)
        dtype = "float32" if tensor.quantized else tensor.dtype
        return TensorMap(tensor.name, tensor.name, dims, dims, None, dtype, tensor.dtype)

    return IOMapping([entry(t) for t in inputs], [entry(t) for t in outputs])


def _spec(entry: TensorMap) -> TensorSpec:
    shape = entry.onnx_shape
    dims: list[Any] | None = None if shape is None else [d if d >= 0 else None for d in shape]
    return TensorSpec(entry.onnx_name, entry.onnx_dtype, dims)


class ModelEdges:
    """A loaded interpreter with its tensors and the mapping to the ONNX side."""

    def __init__(self, interpreter: Any, mapping: IOMapping | None) -> None:
        self.interpreter = interpreter
        self.inputs, self.outputs = io_tensors(interpreter)
        self._index()
        self.mapping = mapping or identity_mapping(self.inputs, self.outputs)
        known = set(self.input_named)
        stale = [m.tflite_name for m in self.mapping.inputs if m.tflite_name not in known]
        if stale:
            raise InputDataError(
                f"the mapping names TFLite input(s) {', '.join(stale)} that the model does not "
                f"have ({', '.join(sorted(known))}): it belongs to another model; recompile"
            )

    def _index(self) -> None:
        self.input_named = {t.name: t for t in self.inputs}
        self.output_named = {t.name: t for t in self.outputs}

    def compiled_specs(self) -> list[TensorSpec]:
        return [t.spec() for t in self.inputs]

    def original_specs(self) -> list[TensorSpec]:
        return [_spec(m) for m in self.mapping.inputs]

    def feeds(self, arrays: Mapping[str, np.ndarray], compiled_names: bool) -> dict[int, Any]:
        """Arrays by tensor index, checked, transposed and quantized as the class says."""
        if compiled_names:
            cast = {
                name: quantize(a, self.input_named[name])
                if name in self.input_named
                and self.input_named[name].quantized
                and a.dtype.kind == "f"
                else a
                for name, a in arrays.items()
            }
            check_arrays(cast, self.compiled_specs())
            return {self.input_named[name].index: a for name, a in cast.items()}
        check_arrays(arrays, self.original_specs())
        feeds: dict[int, Any] = {}
        for entry in self.mapping.inputs:
            tensor = self.input_named[entry.tflite_name]
            array = entry.to_tflite(arrays[entry.onnx_name])
            if tensor.quantized and array.dtype.kind == "f":
                array = quantize(array, tensor)
            elif array.dtype.name != tensor.dtype:
                array = array.astype(tensor.dtype)
            feeds[tensor.index] = array
        return feeds

    def set_inputs(self, feeds: Mapping[int, Any]) -> None:
        """Copy ``feeds`` into the interpreter, resizing dynamic inputs where shapes differ."""
        resized = False
        current = {t.index: t for t in self.inputs}
        for index, array in feeds.items():
            tensor = current[index]
            if list(array.shape) != tensor.shape:
                try:
                    self.interpreter.resize_tensor_input(index, list(array.shape), strict=True)
                except (ValueError, RuntimeError) as exc:
                    raise InputDataError(
                        f"input '{tensor.name}' has shape {list(array.shape)} but the model "
                        f"takes {tensor.shape}: {one_line(str(exc))}"
                    ) from exc
                resized = True
        if resized:
            self.interpreter.allocate_tensors()
            self.inputs, self.outputs = io_tensors(self.interpreter)
            self._index()
        for index, array in feeds.items():
            self.interpreter.set_tensor(index, array)

    def invoke(self) -> None:
        try:
            self.interpreter.invoke()
        except (ValueError, RuntimeError) as exc:
            raise RuntimeFailure(
                f"the LiteRT interpreter failed running the model: {one_line(str(exc))}"
            ) from exc

    def results(self, compiled_names: bool) -> Arrays:
        """The outputs after ``invoke``, keyed and shaped as the class says."""
        if compiled_names:
            return {t.name: self.interpreter.get_tensor(t.index) for t in self.outputs}
        out: Arrays = {}
        for entry in self.mapping.outputs:
            tensor = self.output_named[entry.tflite_name]
            array = self.interpreter.get_tensor(tensor.index)
            if tensor.quantized and entry.onnx_dtype.startswith("float"):
                array = dequantize(array, tensor).astype(entry.onnx_dtype)
            out[entry.onnx_name] = entry.to_onnx(array)
        return out
