"""Input tensors on the host: reading `.npz` files and making random inputs from a signature."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InputDataError
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    import numpy as np

__all__ = ["arrays_file", "calibration_file", "load_npz", "random_inputs", "save_npz"]


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` keyed by name (pickled objects are refused)."""
    import numpy as np

    if not path.is_file():
        raise InputDataError(f"input file {path} not found; pass an existing .npz with --input")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise InputDataError(
            f"{path} is not a readable .npz ({error}); save inputs with numpy.savez(path, "
            "input_name=array, ...)"
        ) from None


def save_npz(path: Path, arrays: Mapping[str, Any]) -> Path:
    """Write ``arrays`` to ``path`` keyed by name; any name works, even one of
    ``numpy.savez``'s own parameters (``file``, ``allow_pickle``)."""
    from edgehub.agent.tensors import save_npz as write_npz

    write_npz(path, arrays)
    return path


def arrays_file(data: Any, save_as: Path, what: str, accepted: str) -> Path | None:
    """``data`` as something the agent reads: a dict of arrays is saved to ``save_as`` (an
    ``.npz``), a path must exist; None stays None. ``accepted`` completes the error message."""
    if data is None:
        return None
    if isinstance(data, dict):
        return save_npz(save_as, data)
    path = Path(data).expanduser()
    if not path.exists():
        raise InputDataError(f"{what} {path} not found; pass {accepted}")
    return regular_file(path, what, InputDataError, directory_ok=True)


def calibration_file(directory: Path, data: Any) -> Path | None:
    """Calibration data for a compiler: an ``.npz``, a directory of samples, or a dict of
    arrays (saved as ``directory/calibration.npz``)."""
    return arrays_file(
        data,
        directory / "calibration.npz",
        "calibration data",
        "an .npz, a directory of samples, or a dict of arrays",
    )


def random_inputs(signature: Sequence[Mapping[str, Any]], seed: int = 0) -> dict[str, np.ndarray]:
    """Random arrays for inputs described as ``{name, dtype, shape}``; symbolic dims become 1.

    Floats are standard normal, integers small non-negative values, booleans random.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for spec in signature:
        shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in spec["shape"])
        dtype = np.dtype(spec["dtype"])
        if dtype.kind == "f":
            arrays[spec["name"]] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            arrays[spec["name"]] = rng.integers(0, 10, size=shape).astype(dtype)
        elif dtype.kind == "b":
            arrays[spec["name"]] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise InputDataError(
                f"cannot make random data for input {spec['name']!r} of type {dtype}; "
                "pass real inputs with --input FILE.npz"
            )
    return arrays
