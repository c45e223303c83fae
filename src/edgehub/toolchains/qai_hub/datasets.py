"""AI Hub datasets (``{input name: [sample, ...]}``, in the model's input order) from
calibration data: a dict of arrays whose leading axis counts samples, or a path the agent's
`~edgehub.agent.calibration.load_calibration` reads (an ``.npz`` of the same, or a directory
of samples)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InputDataError
from edgehub.toolchains.qai_hub.input_specs import InputSpec

if TYPE_CHECKING:
    import numpy as np


def _split(name: str, array: np.ndarray, spec: InputSpec) -> list[np.ndarray]:
    shape, dtype = spec
    if array.ndim == len(shape) + 1:
        return [array[i] for i in range(array.shape[0])]
    if array.ndim == len(shape):
        return [array[i : i + 1] for i in range(array.shape[0])]
    raise InputDataError(
        f"calibration array {name!r} has shape {array.shape}; input {name!r} is "
        f"{shape} {dtype} (leading axis = samples)"
    )


def _check(name: str, sample: np.ndarray, spec: InputSpec) -> np.ndarray:
    shape, dtype = spec
    if sample.dtype.kind == "f" and sample.dtype.name != dtype and dtype.startswith("float"):
        sample = sample.astype(dtype)
    if tuple(sample.shape) != tuple(shape) or sample.dtype.name != dtype:
        raise InputDataError(
            f"calibration sample for {name!r} is {sample.shape} {sample.dtype}; the model "
            f"takes {shape} {dtype}"
        )
    return sample


def _loaded(path: Path, specs: Mapping[str, InputSpec]) -> list[dict[str, Any]]:
    """The samples of a calibration file or directory, read and checked by the agent's loader
    (its float casts made silently, as for a dict)."""
    import io

    from edgehub.agent.calibration import load_calibration
    from edgehub.agent.protocol import UserError
    from edgehub.agent.report import Report
    from edgehub.agent.tensors import TensorSpec

    if not path.exists():
        raise InputDataError(
            f"calibration data {path} not found; pass an .npz, a folder of samples, or a dict "
            "of arrays"
        )
    tensors = [TensorSpec(name, dtype, list(shape)) for name, (shape, dtype) in specs.items()]
    try:
        return load_calibration(str(path), tensors, Report(io.StringIO()))
    except UserError as error:
        raise InputDataError(str(error)) from None


def calibration_entries(data: Any, specs: Mapping[str, InputSpec]) -> dict[str, list[Any]]:
    """Calibration ``data`` as dataset entries checked against the model's ``specs``."""
    import numpy as np

    if isinstance(data, (str, Path)):
        samples = _loaded(Path(data).expanduser(), specs)
        return {name: [sample[name] for sample in samples] for name in specs}
    if not isinstance(data, Mapping):
        raise InputDataError(
            f"calibration_data must be a path or a dict of arrays, got {type(data).__name__}"
        )
    if sorted(data) != sorted(specs):
        raise InputDataError(
            f"calibration data has inputs {sorted(data)}; the model takes {', '.join(specs)}"
        )
    split = {name: _split(name, np.asarray(data[name]), spec) for name, spec in specs.items()}
    counts = {len(v) for v in split.values()}
    if len(counts) != 1 or 0 in counts:
        raise InputDataError("calibration data needs the same number (> 0) of samples per input")
    return {name: [_check(name, s, specs[name]) for s in split[name]] for name in specs}


def sample_entries(inputs: Mapping[str, Any]) -> dict[str, list[Any]]:
    """One inference sample as dataset entries (``{name: [array]}``), order kept."""
    import numpy as np

    return {name: [np.asarray(array)] for name, array in inputs.items()}
