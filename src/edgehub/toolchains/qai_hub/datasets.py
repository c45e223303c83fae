"""AI Hub datasets (``{input name: [sample, ...]}``, in the model's input order) from
calibration data: a dict of arrays or an ``.npz`` whose leading axis counts samples, or a
directory with one ``.npz`` sample per file (``.npy`` files for a single-input model)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InputDataError
from edgehub.toolchains.qai_hub.input_specs import InputSpec

if TYPE_CHECKING:
    import numpy as np

__all__ = ["calibration_entries", "sample_entries"]


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


def _from_samples(
    samples: Sequence[Mapping[str, Any]], specs: Mapping[str, InputSpec]
) -> dict[str, list[np.ndarray]]:
    import numpy as np

    entries: dict[str, list[np.ndarray]] = {name: [] for name in specs}
    for index, sample in enumerate(samples):
        if sorted(sample) != sorted(specs):
            raise InputDataError(
                f"calibration sample {index} has inputs {sorted(sample)}; the model takes "
                f"{', '.join(specs)}"
            )
        for name, spec in specs.items():
            entries[name].append(_check(name, np.asarray(sample[name]), spec))
    return entries


def _directory(folder: Path, specs: Mapping[str, InputSpec]) -> list[dict[str, Any]]:
    import numpy as np

    from edgehub.toolchains.tensors import load_npz

    files = sorted(folder.glob("*.npz"))
    if files:
        return [dict(load_npz(f)) for f in files]
    arrays = sorted(folder.glob("*.npy"))
    if arrays and len(specs) == 1:
        (name,) = specs
        return [{name: np.load(f, allow_pickle=False)} for f in arrays]
    raise InputDataError(
        f"calibration folder {folder} holds no .npz samples (or .npy for a single-input model)"
    )


def calibration_entries(data: Any, specs: Mapping[str, InputSpec]) -> dict[str, list[Any]]:
    """Calibration ``data`` as dataset entries checked against the model's ``specs``."""
    import numpy as np

    from edgehub.toolchains.tensors import load_npz

    if isinstance(data, (str, Path)):
        path = Path(data).expanduser()
        if path.is_dir():
            return _from_samples(_directory(path, specs), specs)
        if not path.is_file():
            raise InputDataError(
                f"calibration data {path} not found; pass an .npz, a folder of samples, or a "
                "dict of arrays"
            )
        data = load_npz(path)
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
    samples = [{name: split[name][i] for name in specs} for i in range(counts.pop())]
    return _from_samples(samples, specs)


def sample_entries(inputs: Mapping[str, Any]) -> dict[str, list[Any]]:
    """One inference sample as dataset entries (``{name: [array]}``), order kept."""
    import numpy as np

    return {name: [np.asarray(array)] for name, array in inputs.items()}
