"""A test double of the `qai_hub` module: Qualcomm AI Hub is NOT reachable from our machines,
so this stands in for the service. It is built on the client's real types (qai-hub 0.56.0):
`Device`, `JobStatus`, `QuantizeDtype`, `ModelMetadataKey`, `TensorSpec`, `Model`, `Dataset`,
the error classes, and jobs that subclass the real `CompileJob` / `QuantizeJob` /
`InferenceJob`, overriding only what would talk to the network. Every public call is
recorded in `calls` with its arguments, so tests assert exactly what edgehub sent.

Jobs walk through a scripted list of states (`script[kind]`; the last state repeats, so a
script that ends in a running state is a job that never finishes). Inference jobs on an ONNX
model really run it with onnxruntime on the host; profiles have the documented result schema
(`recorded_profile`).
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import qai_hub as real

State = real.JobStatus.State
WEB_URL = "https://workbench.aihub.qualcomm.com"
DEFAULT_DEVICES = (
    ("Samsung Galaxy S24", "14", ["chipset:qualcomm-snapdragon-8gen3", "framework:tflite"]),
    ("Samsung Galaxy S23", "13", ["chipset:qualcomm-snapdragon-8gen2", "framework:onnx"]),
    ("QCS8550 (Proxy)", "12", ["chipset:qualcomm-qcs8550-proxy"]),
)
SCRIPTS = {
    "quantize": [State.CREATED, State.QUANTIZING_MODEL, State.SUCCESS],
    "compile": [State.CREATED, State.OPTIMIZING_MODEL, State.SUCCESS],
    "profile": [
        State.CREATED,
        State.PROVISIONING_DEVICE,
        State.MEASURING_PERFORMANCE,
        State.SUCCESS,
    ],
    "inference": [
        State.CREATED,
        State.PROVISIONING_DEVICE,
        State.RUNNING_INFERENCE,
        State.SUCCESS,
    ],
}
QAIRT = "2.37.1.250807"


def recorded_profile(samples_us: list[int] | None = None) -> dict[str, Any]:
    """A profile in the shape `InferenceJob.download_profile()` returns (minor version 2)."""
    samples = samples_us or [1510, 1490, 1500, 1620, 1480, 1505, 1495, 1700, 1502, 1498]
    mib = 1 << 20
    return {
        "execution_summary": {
            "estimated_inference_time": 1500,
            "estimated_inference_peak_memory": 3 * mib,
            "first_load_time": 250_000,
            "first_load_peak_memory": 40 * mib,
            "warm_load_time": 12_000,
            "warm_load_peak_memory": 20 * mib,
            "compile_time": 0,
            "compile_peak_memory": 0,
            "compile_memory_increase_range": None,
            "compile_memory_peak_range": None,
            "first_load_memory_increase_range": (0, 8 * mib),
            "first_load_memory_peak_range": (30 * mib, 40 * mib),
            "warm_load_memory_increase_range": (0, 2 * mib),
            "warm_load_memory_peak_range": (10 * mib, 20 * mib),
            "inference_memory_increase_range": (0, mib),
            "inference_memory_peak_range": (94372, 3124756),
            "all_compile_times": [],
            "all_first_load_times": [250_000],
            "all_warm_load_times": [12_500, 11_500],
            "all_inference_times": samples,
        },
        "execution_detail": [
            {
                "name": "conv1",
                "type": "Conv2D",
                "compute_unit": "NPU",
                "execution_time": 700,
                "execution_cycles": 910_000,
            },
            {"name": "relu", "type": "Relu", "compute_unit": "NPU", "execution_time": 100},
            {"name": "relu", "type": "Relu", "compute_unit": "NPU", "execution_time": 90},
            {"name": "", "type": "Softmax", "compute_unit": "CPU", "execution_time": 300},
        ],
    }


def _lost_connection() -> Exception:
    """The client's error for a request that could not connect (an `InternalError` raised
    from the `requests` ConnectionError under it)."""
    import requests

    try:
        raise requests.exceptions.ConnectionError("Max retries exceeded (Connection refused)")
    except requests.exceptions.ConnectionError as cause:
        try:
            raise real.InternalError("Internal API failure. Could not connect.") from cause
        except real.InternalError as error:
            return error


class _Scripted:
    """What the double's jobs share: a scripted state walk and a URL."""

    _owner: QAIHubDouble
    job_id: str
    _states: list[Any]

    def _script(self, owner: QAIHubDouble, kind: str, name: str, options: str) -> None:
        self._owner = owner
        self.job_id = f"j{kind[0]}{next(owner._ids):05d}"
        self.name = name
        self.options = options
        self.date = datetime.now()
        self.hub_version = "aihub-2026.09"
        self.project_id = ""
        self.verbose = False
        self._states = list(owner.script.get(kind) or SCRIPTS[kind])
        self.status_reads = 0

    @property
    def url(self) -> str:  # the real property asks the client's config for the web URL
        return f"{WEB_URL}/jobs/{self.job_id}/"

    def get_status(self) -> Any:
        self.status_reads += 1
        step = self._states.pop(0) if len(self._states) > 1 else self._states[0]
        if step == "interrupt":  # the user presses Ctrl-C while edgehub waits
            raise KeyboardInterrupt
        if step == "disconnect":  # the network goes away: what the real client raises then
            raise _lost_connection()
        state, message = step if isinstance(step, tuple) else (step, None)
        return real.JobStatus(state, message)

    def wait(self, timeout: int | None = None) -> Any:
        raise AssertionError("edgehub waits with its own loop (status streaming, timeout)")


class DoubleCompileJob(_Scripted, real.CompileJob):
    def __init__(self, owner: QAIHubDouble, model: Any, device: Any, options: str, specs: Any):
        self._script(owner, "compile", "compile", options)
        self.device, self.model, self.shapes = device, model, specs
        self.compatible_devices = [device]
        self.calibration_dataset = None
        runtime = "tflite" if "--target_runtime tflite" in options else "onnx"
        source = owner.files[model.model_id]
        suffix = ".tflite" if runtime == "tflite" else ".onnx"
        self._file = source if runtime == "onnx" else None
        inputs, outputs = owner.io_names(source)
        rename = owner.renamer
        self._target = owner.new_model(
            self._file,
            suffix,
            metadata={real.ModelMetadataKey.QAIRT_SDK_VERSION: QAIRT},
            input_spec={None: [real.TensorSpec(rename(n), "float32") for n in inputs]},
            output_spec={None: [real.TensorSpec(rename(n), "float32") for n in outputs]},
        )

    def get_target_model(self) -> Any:
        return self._target

    def download_target_model(self, filename: str) -> str | None:
        data = self._file.read_bytes() if self._file else b"\x1c\x00\x00\x00TFL3" + b"\0" * 24
        Path(filename).write_bytes(data)
        self._owner.files[self._target.model_id] = Path(filename)
        return filename


class DoubleQuantizeJob(_Scripted, real.QuantizeJob):
    def __init__(self, owner: QAIHubDouble, model: Any, dataset: Any, weights: Any, acts: Any):
        self._script(owner, "quantize", "quantize", "")
        self.model, self.calibration_dataset, self.shapes = model, dataset, {}
        self.weights_dtype, self.activations_dtype = weights, acts
        self._target = owner.new_model(owner.files[model.model_id], ".onnx")

    def get_target_model(self) -> Any:
        return self._target

    def download_target_model(self, filename: str | None = None) -> Any:
        assert filename is not None
        Path(filename).write_bytes(self._owner.files[self._target.model_id].read_bytes())
        return filename


class DoubleInferenceJob(_Scripted, real.InferenceJob):
    def __init__(
        self, owner: QAIHubDouble, model: Any, device: Any, inputs: Any, options: str, profile: bool
    ):
        self._script(owner, "profile" if profile else "inference", "job", options)
        self.device, self.model, self.inputs, self.shapes = device, model, inputs, {}
        self.outputs = None
        self.profiling = profile

    def download_profile(self, filename: str | None = None) -> Any:
        if self.profiling and self._owner.profile_of is not None:
            return self._owner.profile_of(self.model)
        return self._owner.profile if self.profiling else {}

    def download_output_data(self, filename: str | None = None) -> Any:
        if self.inputs is None:
            return None
        return self._owner.infer(self.model, self.inputs.download())


class QAIHubDouble:
    """The `qai_hub` module's public functions, recording their calls."""

    __version__ = str(real.__version__)
    Device = real.Device
    JobStatus = real.JobStatus
    JobType = real.JobType
    QuantizeDtype = real.QuantizeDtype
    ModelMetadataKey = real.ModelMetadataKey
    TensorSpec = real.TensorSpec
    Model = real.Model
    Dataset = real.Dataset
    Error = real.Error
    UserError = real.UserError
    InternalError = real.InternalError

    def __init__(self, devices: tuple[tuple[str, str, list[str]], ...] = DEFAULT_DEVICES):
        self._devices = [real.Device(name, os, list(attrs)) for name, os, attrs in devices]
        self._ids = itertools.count(1)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.script: dict[str, list[Any]] = {}
        self.models: dict[str, Any] = {}
        self.files: dict[str, Path | None] = {}
        self.datasets: dict[str, Any] = {}
        self.jobs: dict[str, Any] = {}
        self.profile = recorded_profile()
        self.profile_of: Any = None  # model -> its profile, where models must differ
        self.renamer = lambda name: name
        self.tflite_outputs: dict[str, list[np.ndarray]] | None = None
        self.refuse: dict[str, Exception] = {}

    # -- helpers of the double --------------------------------------------------------------
    def _call(self, call: str, /, **kwargs: Any) -> None:
        self.calls.append((call, kwargs))
        if call in self.refuse:
            raise self.refuse[call]

    def called(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for call, kwargs in self.calls if call == name]

    def new_model(self, path: Path | None, suffix: str, **fields: Any) -> Any:
        model_id = f"m{next(self._ids):05d}"
        kind = real.SourceModelType.TFLITE if suffix == ".tflite" else real.SourceModelType.ONNX
        model = real.Model(
            owner=self,  # type: ignore[arg-type]
            model_id=model_id,
            date=datetime.now(),
            model_type=kind,
            name=path.name if path else f"model{suffix}",
            metadata=fields.get("metadata", {}),
            model=None,
            verbose=False,
            producer=None,
            input_spec=fields.get("input_spec", {}),
            output_spec=fields.get("output_spec", {}),
        )
        self.models[model_id] = model
        self.files[model_id] = path
        return model

    def io_names(self, path: Path | None) -> tuple[list[str], list[str]]:
        import onnx

        if path is None or path.suffix != ".onnx":
            return [], []
        graph = onnx.load(str(path), load_external_data=False).graph
        inits = {i.name for i in graph.initializer}
        return [v.name for v in graph.input if v.name not in inits], [v.name for v in graph.output]

    def infer(self, model: Any, entries: dict[str, list[np.ndarray]]) -> dict[str, list[Any]]:
        path = self.files.get(model.model_id)
        if path is None or path.suffix != ".onnx":
            assert self.tflite_outputs is not None, "set tflite_outputs for .tflite inference"
            return self.tflite_outputs
        import onnxruntime as ort

        original = {self.renamer(n): n for n in self.io_names(path)[0]}
        unknown = sorted(set(entries) - set(original))
        if unknown:  # the service refuses inputs the model does not have
            raise real.UserError(f"Dataset schema does not match the model: {unknown}")
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        outputs: dict[str, list[Any]] = {self.renamer(n): [] for n in names}
        for index in range(len(next(iter(entries.values())))):  # every sample, as the service
            feeds = {original[name]: samples[index] for name, samples in entries.items()}
            for n, result in zip(names, session.run(names, feeds), strict=True):
                outputs[self.renamer(n)].append(result)
        return outputs

    # -- the module's public functions ------------------------------------------------------
    def get_devices(self, name: str = "", os: str = "", attributes: Any = None) -> list[Any]:
        self._call("get_devices", name=name, os=os, attributes=attributes)
        return [d for d in self._devices if not name or d.name == name]

    def upload_model(self, model: Any, name: str | None = None, project: Any = None) -> Any:
        self._call("upload_model", model=model, name=name, project=project)
        path = Path(model)
        return self.new_model(path, path.suffix)

    def get_model(self, model_id: str) -> Any:
        self._call("get_model", model_id=model_id)
        if model_id not in self.models:
            raise real.UserError(f"Model ID '{model_id}' could not be found.")
        return self.models[model_id]

    def upload_dataset(self, data: Any, name: str | None = None, project: Any = None) -> Any:
        self._call("upload_dataset", data=data, name=name, project=project)
        now = datetime.now()
        dataset = real.Dataset(
            owner=self,  # type: ignore[arg-type]
            dataset_id=f"d{next(self._ids):05d}",
            creation_time=now,
            expiration_time=now + timedelta(days=30),
            dataset_name=name or "dataset",
            verbose=False,
            data=dict(data),
        )
        self.datasets[dataset.dataset_id] = dataset
        return dataset

    def get_dataset(self, dataset_id: str) -> Any:
        self._call("get_dataset", dataset_id=dataset_id)
        if dataset_id not in self.datasets:
            raise real.UserError(f"Dataset ID '{dataset_id}' could not be found.")
        return self.datasets[dataset_id]

    def _keep(self, job: Any) -> Any:
        self.jobs[job.job_id] = job
        return job

    def submit_quantize_job(
        self,
        model: Any,
        calibration_data: Any,
        weights_dtype: Any = None,
        activations_dtype: Any = None,
        name: str | None = None,
        options: str = "",
        project: Any = None,
    ) -> Any:
        self._call(
            "submit_quantize_job",
            model=model,
            calibration_data=calibration_data,
            weights_dtype=weights_dtype,
            activations_dtype=activations_dtype,
            name=name,
            options=options,
        )
        return self._keep(
            DoubleQuantizeJob(self, model, calibration_data, weights_dtype, activations_dtype)
        )

    def submit_compile_job(
        self,
        model: Any,
        device: Any,
        name: str | None = None,
        input_specs: Any = None,
        options: str = "",
        single_compile: bool = True,
        calibration_data: Any = None,
        retry: bool = True,
        project: Any = None,
    ) -> Any:
        self._call(
            "submit_compile_job",
            model=model,
            device=device,
            name=name,
            input_specs=input_specs,
            options=options,
            calibration_data=calibration_data,
        )
        devices = device if isinstance(device, list) else [device]
        jobs = [self._keep(DoubleCompileJob(self, model, d, options, input_specs)) for d in devices]
        return jobs if isinstance(device, list) else jobs[0]

    def submit_inference_job(
        self,
        model: Any,
        device: Any,
        inputs: Any = None,
        name: str | None = None,
        options: str = "",
        retry: bool = True,
        profile: bool = True,
        project: Any = None,
    ) -> Any:
        self._call(
            "submit_inference_job",
            model=model,
            device=device,
            inputs=inputs,
            name=name,
            options=options,
            profile=profile,
        )
        devices = device if isinstance(device, list) else [device]
        jobs = [
            self._keep(DoubleInferenceJob(self, model, d, inputs, options, profile))
            for d in devices
        ]
        return jobs if isinstance(device, list) else jobs[0]

    def get_job(self, job_id: str, job_type: Any = None) -> Any:
        self._call("get_job", job_id=job_id)
        if job_id not in self.jobs:
            raise real.UserError(
                f"Job ID '{job_id}' could not be found. It may not exist or you may not have "
                "permission to view it."
            )
        return self.jobs[job_id]
