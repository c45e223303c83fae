"""Evaluation datasets: samples and optional labels, checked against a model's inputs.

A dataset is a directory of ``.npz`` files, one sample each, keyed by input name and read in
sorted file-name order (a bare ``.npy`` per sample for a one-input model), or one ``.npz``
whose arrays carry a leading samples axis. Labels are per-sample targets, in sample order: an
``.npz`` holding one array (or one named ``labels``) with a leading samples axis, or a
``.json`` list (or, for a directory dataset, an object keyed by sample file name). Nothing is
ever unpickled; every problem is one `InputDataError` naming the sample.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InputDataError
from edgehub.tracking.artifacts import content_hash

if TYPE_CHECKING:
    import numpy as np

    from edgehub.agent.tensors import TensorSpec

__all__ = ["Dataset", "load_dataset", "tensor_specs"]

MAX_LABELS_JSON = 256 << 20


@dataclass
class Dataset:
    """Checked samples in order, their names (file names, or ``#i`` in one stacked file),
    the labels (one array per sample) when given, and the content hash of ``path``. The
    samples of one stacked file are views of it mapped: checking them reads only its headers,
    and a sample's bytes are read where it is used (the runs read the file themselves)."""

    path: Path
    stacked: bool
    names: list[str]
    samples: list[dict[str, np.ndarray]]
    labels: list[np.ndarray] | None = None
    labels_path: Path | None = None
    sha256: str = ""

    def __len__(self) -> int:
        return len(self.samples)


def tensor_specs(signature: Sequence[dict[str, Any]]) -> list[TensorSpec]:
    """The agent's input specs from an inspection's ``inputs`` list."""
    from edgehub.agent.tensors import TensorSpec, normalize_dim

    return [
        TensorSpec(
            str(entry["name"]),
            str(entry["dtype"]),
            None if entry.get("shape") is None else [normalize_dim(d) for d in entry["shape"]],
        )
        for entry in signature
    ]


def load_dataset(path: Path, specs: Sequence[TensorSpec], labels: Path | None = None) -> Dataset:
    """Read and check every sample of ``path`` (and ``labels``) against ``specs``."""
    from edgehub.agent import inputs as agent_inputs
    from edgehub.agent.protocol import AgentError
    from edgehub.agent.tensors import load_inputs

    if not path.exists():
        raise InputDataError(f"dataset {path} not found; pass a directory of .npz or one .npz")
    try:
        if path.is_dir():
            files = agent_inputs.sample_files(path)
            if not files:
                raise InputDataError(
                    f"dataset directory {path} holds no .npz samples; save one "
                    "numpy.savez(FILE, input_name=array) per sample there"
                )
            for file in files:
                _npz_or_npy(file, f"dataset sample {file.name}")
            samples = [load_inputs(f, specs, f"dataset sample {f.name}") for f in files]
            dataset = Dataset(path, False, [f.name for f in files], samples)
        else:
            _npz_or_npy(path, "dataset")
            samples = agent_inputs.split_stacked(str(path), specs, mapped=True)
            names = [f"#{i}" for i in range(len(samples))]
            dataset = Dataset(path, True, names, samples)
    except AgentError as error:  # the agent's own checks, shared with the device side
        raise InputDataError(str(error)) from None
    if labels is not None:
        dataset.labels = _load_labels(labels, dataset)
        dataset.labels_path = labels
    dataset.sha256 = content_hash(path)
    return dataset


def _load_labels(path: Path, dataset: Dataset) -> list[np.ndarray]:
    import numpy as np

    if not path.is_file():
        raise InputDataError(f"labels {path} not found; pass an .npz or .json of targets")
    values = _json_labels(path, dataset) if path.suffix == ".json" else _npz_labels(path)
    if len(values) != len(dataset):
        raise InputDataError(
            f"labels {path} hold {len(values)} entries but dataset {dataset.path} has "
            f"{len(dataset)} samples; give one label per sample, in sample order"
        )
    arrays = [np.asarray(v) for v in values]
    for name, array in zip(dataset.names, arrays, strict=True):
        if array.dtype.kind not in "biuf" or not np.all(np.isfinite(array)):
            raise InputDataError(
                f"labels {path}: the label of sample {name} is not finite numbers; give "
                "numeric targets (class indices, masks or values)"
            )
    return arrays


def _npz_or_npy(path: Path, what: str) -> None:
    """Refuse a file that is neither an .npz (a zip) nor an .npy before numpy reads it."""
    try:
        with path.open("rb") as handle:
            head = handle.read(6)
    except OSError as error:
        raise InputDataError(f"{what}: cannot read {path} ({error.strerror})") from None
    if head[:4] != b"PK\x03\x04" and head != b"\x93NUMPY":
        raise InputDataError(
            f"{what}: {path} is not an .npz or .npy file; save it with numpy.savez"
        )


def _npz_labels(path: Path) -> list[Any]:
    from edgehub.agent.protocol import AgentError
    from edgehub.agent.tensors import load_arrays

    _npz_or_npy(path, "labels")
    try:
        loaded = load_arrays(path, "labels")
    except AgentError as error:
        raise InputDataError(str(error)) from None
    if isinstance(loaded, dict):
        if len(loaded) == 1:
            (array,) = loaded.values()
        elif "labels" in loaded:
            array = loaded["labels"]
        else:
            raise InputDataError(
                f"labels {path} hold several arrays ({', '.join(loaded)}); save one, or name "
                "it 'labels'"
            )
    else:
        array = loaded
    if array.ndim == 0:
        raise InputDataError(f"labels {path} hold a scalar; give one label per sample")
    return list(array)


def _json_labels(path: Path, dataset: Dataset) -> list[Any]:
    if path.stat().st_size > MAX_LABELS_JSON:
        raise InputDataError(f"labels {path} exceed {MAX_LABELS_JSON >> 20} MiB; use an .npz")
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise InputDataError(f"labels {path} are not valid JSON ({error})") from None
    if isinstance(data, dict) and not dataset.stacked and "labels" not in data:
        missing = [n for n in dataset.names if n not in data]
        if missing:
            raise InputDataError(
                f"labels {path} have no entry for dataset sample {missing[0]}; key every "
                "sample's label by its file name"
            )
        data = [data[n] for n in dataset.names]
    elif isinstance(data, dict):
        data = data.get("labels")
    if not isinstance(data, list):
        raise InputDataError(f"labels {path} must be a JSON list with one target per sample")
    for index, value in enumerate(data):
        if not _numeric(value):
            name = dataset.names[index] if index < len(dataset) else f"#{index}"
            raise InputDataError(
                f"labels {path}: the label of sample {name} is not a number or list of "
                "numbers; give numeric targets"
            )
    return data


def _numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, list) and bool(value) and all(_numeric(v) for v in value)
