"""``trt.invoke``: run an engine once on given inputs with trtexec (needs a GPU).

Request: ``{"engine": PATH, "input": NPZ, "output_json": PATH, "log": PATH}``. The engine's I/O
is read through the TensorRT bindings, the inputs checked and written raw for ``--loadInputs``;
``--exportOutput`` writes the outputs as JSON. Data: ``output_dtypes`` (name -> numpy dtype,
for the host to restore them) and ``inputs``.
"""

from __future__ import annotations

import os
from typing import Any

from ..protocol import CommandOutput, InputDataError, Params, UsageError
from ..report import Report
from ..tensors import TensorSpec, array_info, load_inputs
from .engine_check import check_engine, require_engine_file
from .runtime import import_tensorrt, load_engine, tensor_mode
from .trtexec import require_gpu_and_trtexec, run_trtexec


def engine_specs(engine_path: str) -> list[dict[str, Any]]:
    """[{name, mode, dtype, shape}] of an engine's I/O tensors (opening it needs a GPU)."""
    trt = import_tensorrt()
    logger = trt.module.Logger(trt.module.Logger.WARNING)  # alive as long as the runtime
    runtime = trt.module.Runtime(logger)
    engine = load_engine(runtime, engine_path, f"'{os.path.basename(engine_path)}'")
    specs = []
    for index in range(engine.num_io_tensors):
        name = engine.get_tensor_name(index)
        mode = tensor_mode(engine, name)
        dtype = trt.module.nptype(engine.get_tensor_dtype(name))
        shape = [int(d) for d in engine.get_tensor_shape(name)]
        specs.append({"name": name, "mode": mode, "dtype": dtype.__name__, "shape": shape})
    return specs


def run(params: Params, report: Report) -> CommandOutput:
    engine = params.path("engine")
    input_path = params.path("input")
    output_json = params.path("output_json")
    log = params.path("log")
    record = params.raw_value("engine_record")
    params.finish()
    require_engine_file(str(engine))
    check_engine(record)
    trtexec = require_gpu_and_trtexec("trt.invoke")
    specs = engine_specs(engine)
    inputs = [s for s in specs if s["mode"] == "INPUT"]
    for spec in inputs:
        if ":" in spec["name"] or "," in spec["name"]:
            raise UsageError(
                f"input '{spec['name']}' holds ':' or ',', which trtexec's --loadInputs cannot "
                "name: rename the model input"
            )
    tensor_specs = [
        TensorSpec(s["name"], s["dtype"], [d if d >= 0 else None for d in s["shape"]])
        for s in inputs
    ]
    feeds = load_inputs(input_path, tensor_specs)
    loads, shapes = [], []
    for index, spec in enumerate(inputs):
        array = feeds[spec["name"]]
        raw = f"input_{index}.bin"
        array.tofile(raw)
        loads.append(f"{spec['name']}:{raw}")
        shapes.append(f"{spec['name']}:{'x'.join(str(d) for d in array.shape)}")
    argv = [trtexec, f"--loadEngine={engine}", "--loadInputs=" + ",".join(loads),
            f"--exportOutput={output_json}", "--iterations=1", "--warmUp=0", "--duration=0",
            "--avgRuns=1"]  # fmt: skip
    if any(-1 in spec["shape"] for spec in inputs):
        argv.append("--shapes=" + ",".join(shapes))
    run_trtexec(argv, log, report)
    if not os.path.isfile(output_json):
        raise InputDataError("trtexec wrote no output file; see the trtexec log")
    dtypes = {s["name"]: s["dtype"] for s in specs if s["mode"] == "OUTPUT"}
    data = {
        "output_json": output_json,
        "log": log,
        "output_dtypes": dtypes,
        "inputs": [array_info(name, array) for name, array in feeds.items()],
    }
    return CommandOutput(params=params.resolved, metrics={}, data=data)
