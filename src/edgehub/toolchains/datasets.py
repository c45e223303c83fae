"""Evaluation datasets: samples and optional labels, checked against a model's inputs.

A dataset is a directory of ``.npz`` files, one sample each, keyed by input name and read in
sorted file-name order (a bare ``.npy`` per sample for a one-input model), or one ``.npz``
whose arrays carry a leading samples axis. Labels are per-sample targets, in sample order: an
``.npz`` holding one array (or one named ``labels``) with a leading samples axis, or a
``.json`` list (or, for a directory dataset, an object keyed by sample file name).

Nothing is unpickled, and only regular files are read; compressed arrays are checked against
``EDGEHUB_DATASET_MAX_UNPACKED`` before any byte is unpacked; float samples must be finite;
every problem is one `InputDataError` naming the file.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.agent.protocol import depth_over
from edgehub.errors import InputDataError, OperationCancelled
from edgehub.limits import env_size, human_size
from edgehub.toolchains.outputs import number
from edgehub.tracking.artifacts import content_hash
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    import numpy as np

    from edgehub.agent.tensors import TensorSpec


MAX_LABELS_JSON = 256 << 20
MAX_LABELS_DEPTH = 34
"""Nesting of a labels JSON: an object, the samples' list, and a label of up to numpy's 32
dimensions."""
MAX_UNPACKED_VARIABLE = "EDGEHUB_DATASET_MAX_UNPACKED"
MAX_UNPACKED = 1 << 30
"""Bytes the compressed arrays of a dataset (or of its labels) may unpack to, together."""
_FINITE_BLOCK = 1 << 24  # values checked for NaN or infinity at a time

Stamp = tuple[tuple[str, int, int, int, int], ...]


@dataclass
class Dataset:
    """Checked samples in order (those of one stacked file are mapped views of it), their names
    (file names, or ``#i`` in one stacked file), the labels when given, the content hash of
    ``path``, and ``stamp``: the files' identities, sizes and times when read (see `watch`)."""

    path: Path
    stacked: bool
    names: list[str]
    samples: list[dict[str, np.ndarray]]
    labels: list[np.ndarray] | None = None
    labels_path: Path | None = None
    sha256: str = ""
    stamp: Stamp = field(default=(), repr=False)

    def __len__(self) -> int:
        return len(self.samples)

    def changed(self) -> bool:
        """Whether a file of the dataset (or its labels) changed since it was read."""
        try:
            return _stamp(self.path, self.labels_path) != self.stamp
        except OSError:
            return True

    def check_unchanged(self) -> None:
        """Refuse (`InputDataError`) a dataset that changed since it was read."""
        if self.changed():
            raise InputDataError(
                f"dataset {self.path} changed while the eval ran (written, cut short or "
                "replaced); its figures would mix two datasets: run it again"
            )

    @contextmanager
    def watch(self) -> Iterator[None]:
        """Run the body on this dataset: a failure where the dataset changed meanwhile is that
        change, said in one line (`check_unchanged`; call that at the end of the body too)."""
        try:
            yield
        except OperationCancelled:
            raise
        except Exception:
            self.check_unchanged()
            raise


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


def check_dataset_files(path: Path, labels: Path | None = None) -> list[Path]:
    """The sample files of dataset ``path`` (itself, or the ``.npz`` files of a directory,
    else its ``.npy`` files), each, and ``labels``, checked to be a regular file."""
    found = regular_file(path, "dataset", InputDataError, directory_ok=True)
    if labels is not None:
        regular_file(labels, "labels", InputDataError)
    if not found.is_dir():
        return [found]
    try:
        names = sorted(os.listdir(found))
    except OSError as error:
        raise InputDataError(f"cannot list dataset {found}: {error.strerror}") from None
    files = [found / n for n in names if n.endswith(".npz")] or [
        found / n for n in names if n.endswith(".npy")
    ]
    if not files:
        raise InputDataError(
            f"dataset directory {found} holds no .npz samples; save one "
            "numpy.savez(FILE, input_name=array) per sample there"
        )
    for file in files:
        regular_file(file, "dataset sample", InputDataError)
    return files


def max_unpacked() -> int:
    """`MAX_UNPACKED`, or the size in ``EDGEHUB_DATASET_MAX_UNPACKED``."""
    return env_size(MAX_UNPACKED_VARIABLE, MAX_UNPACKED)


def load_dataset(path: Path, specs: Sequence[TensorSpec], labels: Path | None = None) -> Dataset:
    """Read and check every sample of ``path`` (and ``labels``) against ``specs``."""
    from edgehub.agent import inputs as agent_inputs
    from edgehub.agent.protocol import AgentError
    from edgehub.agent.tensors import load_arrays, load_inputs

    files = check_dataset_files(path, labels)
    before = _stamp(path, labels)
    limit = max_unpacked()
    _check_unpacked(files, limit, f"dataset {path}")
    try:
        if path.is_dir():
            for file in files:
                _npz_or_npy(file, f"dataset sample {file.name}")
            samples = []
            for file in files:
                sample = load_inputs(file, specs, f"dataset sample {file.name}", limit)
                for name, array in sample.items():
                    _check_finite(array, f"dataset sample {file}", name, False)
                samples.append(sample)
            dataset = Dataset(path, False, [f.name for f in files], samples)
        else:
            _npz_or_npy(path, "dataset")
            loaded = load_arrays(path, "dataset", True, limit)
            arrays = loaded if isinstance(loaded, dict) else {"": loaded}
            for name, array in arrays.items():
                _check_finite(array, f"dataset {path}", name or None, True)
            samples = agent_inputs.split_arrays(loaded, str(path), specs)
            names = [f"#{i}" for i in range(len(samples))]
            dataset = Dataset(path, True, names, samples)
    except AgentError as error:  # the agent's own checks, shared with the device side
        raise InputDataError(str(error)) from None
    if labels is not None:
        dataset.labels = _load_labels(labels, dataset, limit)
        dataset.labels_path = labels
    dataset.sha256 = content_hash(path)
    dataset.stamp = _stamp(path, labels)
    if dataset.stamp != before:
        raise InputDataError(f"dataset {path} changed while it was read; run it again")
    return dataset


def _stamp(path: Path, labels: Path | None) -> Stamp:
    """Identity, size and modification time of ``path`` (of a directory's files too) and
    ``labels`` (not the change time: the runs hard-link the files, which changes it)."""
    paths = [path, *([labels] if labels is not None else [])]
    if path.is_dir():
        paths += [path / n for n in sorted(os.listdir(path))]
    found = []
    for item in paths:
        info = item.stat()
        found.append((str(item), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
    return tuple(found)


def _check_unpacked(files: Sequence[Path], limit: int, what: str) -> None:
    """Refuse ``files`` whose compressed arrays declare (in their archives' directories)
    that they unpack to more than ``limit`` bytes together, before any is unpacked."""
    total = 0
    for file in files:
        try:
            with zipfile.ZipFile(file) as archive:
                members = archive.infolist()
        except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, ValueError):
            continue  # not an archive: its reader says what it is
        total += sum(m.file_size for m in members if m.compress_type != zipfile.ZIP_STORED)
    if total > limit:
        raise InputDataError(
            f"{what}: its compressed arrays unpack to {human_size(total)}, over the limit of "
            f"{human_size(limit)}; save them uncompressed (numpy.savez, which is read in "
            f"place), or raise {MAX_UNPACKED_VARIABLE}"
        )


def first_non_finite(array: np.ndarray) -> tuple[int, ...] | None:
    """The index of the first NaN or infinity of a float ``array`` (None: none, or not
    floats), scanned a block at a time (a mapped array is not read into memory whole)."""
    import numpy as np

    if array.dtype.kind not in "fc" or not array.size:
        return None
    if array.ndim and array.flags.c_contiguous:
        flat = array.reshape(-1)
        for start in range(0, flat.size, _FINITE_BLOCK):
            bad = np.flatnonzero(~np.isfinite(flat[start : start + _FINITE_BLOCK]))
            if bad.size:
                return _index(start + int(bad[0]), array.shape)
        return None
    found = np.flatnonzero(~np.isfinite(array))
    return _index(int(found[0]), array.shape) if found.size else None


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    import numpy as np

    return tuple(int(i) for i in np.unravel_index(flat, shape))


def non_finite_kind(array: np.ndarray, index: tuple[int, ...]) -> str:
    """ "NaN" or "an infinity": what ``array`` holds at ``index``."""
    import numpy as np

    return "NaN" if np.isnan(array[index]) else "an infinity"


def _check_finite(array: np.ndarray, what: str, name: str | None, stacked: bool) -> None:
    """Refuse a float ``array`` (``name`` of ``what``) holding NaN or infinity, naming the
    index of the first such value (and its sample, for a ``stacked`` array)."""
    index = first_non_finite(array)
    if index is None:
        return
    sample = f" (sample #{index[0]})" if stacked and index else ""
    where = f"array {name!r}" if name else "its array"
    raise InputDataError(
        f"{what}: {where} holds {non_finite_kind(array, index)} at index {list(index)}"
        f"{sample}; samples must be finite numbers: fix or drop that sample"
    )


def _load_labels(path: Path, dataset: Dataset, limit: int) -> list[np.ndarray]:
    import numpy as np

    if path.suffix == ".json":
        values = _json_labels(path, dataset)
    else:
        _check_unpacked([path], limit, f"labels {path}")
        values = _npz_labels(path, limit)
    if len(values) != len(dataset):
        raise InputDataError(
            f"labels {path} hold {len(values)} entries but dataset {dataset.path} has "
            f"{len(dataset)} samples; give one label per sample, in sample order"
        )
    arrays = []
    for name, value in zip(dataset.names, values, strict=True):
        try:
            array = np.asarray(value)
        except ValueError:  # lists of unequal lengths
            array = np.asarray(None)
        if array.dtype.kind not in "biuf" or not np.all(np.isfinite(array)):
            raise InputDataError(
                f"labels {path}: the label of sample {name} is not finite numbers; give "
                "numeric targets (class indices, masks or values)"
            )
        arrays.append(array)
    return arrays


def _npz_or_npy(path: Path, what: str) -> None:
    """Refuse a file that is neither an .npz (a zip) nor an .npy before numpy reads it (opened
    without blocking: a FIFO put in its place since it was checked is refused too)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputDataError(f"{what}: {path} is not a regular file; give an .npz file")
            head = os.read(fd, 6)
        finally:
            os.close(fd)
    except OSError as error:
        raise InputDataError(f"{what}: cannot read {path} ({error.strerror})") from None
    if head[:4] != b"PK\x03\x04" and head != b"\x93NUMPY":
        raise InputDataError(
            f"{what}: {path} is not an .npz or .npy file; save it with numpy.savez"
        )


def _npz_labels(path: Path, limit: int) -> list[Any]:
    from edgehub.agent.protocol import AgentError
    from edgehub.agent.tensors import load_arrays

    _npz_or_npy(path, "labels")
    try:
        loaded = load_arrays(path, "labels", max_unpacked=limit)
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
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_LABELS_JSON + 1)
    except OSError as error:
        raise InputDataError(f"cannot read labels {path}: {error.strerror}") from None
    if len(raw) > MAX_LABELS_JSON:
        raise InputDataError(f"labels {path} exceed {MAX_LABELS_JSON >> 20} MiB; use an .npz")
    too_deep = InputDataError(
        f"labels {path} nest deeper than {MAX_LABELS_DEPTH} levels; give one number or list "
        "of numbers per sample"
    )
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise too_deep from None
    except ValueError as error:  # UnicodeDecodeError included
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputDataError(f"labels {path} are not valid JSON ({reason})") from None
    if depth_over(data, MAX_LABELS_DEPTH):
        raise too_deep
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
    if number(value) is not None:
        return True
    return isinstance(value, list) and bool(value) and all(_numeric(v) for v in value)
