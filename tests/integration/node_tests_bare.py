"""Runs inside the ORT image: every onnx backend node test with bare onnxruntime.

Usage: python node_tests_bare.py OUT.json. Writes {"passed": [...], "failed": {...}} where a
test passes when every output matches the expected one (rtol 1e-3, atol 1e-7, the onnx backend
test defaults). Only tests whose inputs and outputs are all plain tensors are considered.
"""

import glob
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def load_tensors(folder, prefix):
    arrays = []
    for path in sorted(
        glob.glob(os.path.join(folder, prefix + "_*.pb")),
        key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]),
    ):
        tensor = onnx.TensorProto()
        with open(path, "rb") as handle:
            tensor.ParseFromString(handle.read())
        arrays.append(numpy_helper.to_array(tensor))
    return arrays


def main():
    result = {"passed": [], "failed": {}}
    for case in sorted(os.listdir(DATA)):
        folder = os.path.join(DATA, case)
        data = os.path.join(folder, "test_data_set_0")
        if not os.path.isdir(data):
            continue
        try:
            inputs = load_tensors(data, "input")
            expected = load_tensors(data, "output")
            session = ort.InferenceSession(
                os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"]
            )
            names = [i.name for i in session.get_inputs()]
            outputs = session.run(None, dict(zip(names, inputs, strict=False)))
            for got, want in zip(outputs, expected, strict=False):
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-7)
            if len(outputs) != len(expected):
                raise AssertionError("output count differs")
            result["passed"].append(case)
        except Exception as error:
            result["failed"][case] = type(error).__name__
    with open(sys.argv[1], "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
