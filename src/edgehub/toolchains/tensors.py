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


def load_npz(
    path: Path, *, mapped: bool = False, max_unpacked: int | None = None
) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` keyed by name (pickled objects are refused); ``mapped`` and
    ``max_unpacked`` (what its compressed arrays may unpack to): see
    `~edgehub.agent.npz.read_npz`."""
    from edgehub.agent.npz import NpzLimitError, read_npz

    if not path.is_file():
        raise InputDataError(f"input file {path} not found; pass an existing .npz with --input")
    try:
        return read_npz(path, mapped, max_unpacked)
    except NpzLimitError as error:
        raise InputDataError(f"{path} is too large: {error}") from None
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


def random_inputs(
    signature: Sequence[Mapping[str, Any]], seed: int = 0, input_shape: Any = None
) -> dict[str, np.ndarray]:
    """Random arrays for inputs described as ``{name, dtype, shape}``: the very arrays the agent
    makes for the same inputs and seed (`edgehub.agent.tensors.random_inputs` makes them), an
    unknown dimension taking its size from ``input_shape``, else 1."""
    from edgehub.agent.protocol import UserError
    from edgehub.agent.shapes import parse_input_shape
    from edgehub.agent.tensors import TensorSpec
    from edgehub.agent.tensors import random_inputs as agent_random_inputs

    specs = [
        TensorSpec(
            str(spec["name"]),
            str(spec["dtype"]),
            None if spec.get("shape") is None else [_dim(d) for d in spec["shape"]],
            _limit(spec.get("values_below")),
        )
        for spec in signature
    ]
    try:
        shapes = parse_input_shape(plain_shape(input_shape), specs)
        arrays, _ = agent_random_inputs(specs, seed=seed, shapes=shapes)
    except UserError as error:
        raise InputDataError(str(error)) from None
    return arrays


def _limit(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def plain_shape(value: Any) -> Any:
    """An ``input_shape`` option's value as the agent reads it: a list, or name -> list."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {str(k): [int(d) for d in v] for k, v in value.items()}
    return [int(d) for d in value]


def _dim(dim: Any) -> int | str | None:
    """A signature's dimension as the agent's `TensorSpec` holds it: a positive size, a name,
    or None (unknown: ``"?"``, 0 and -1 as exporters write it)."""
    if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0:
        return dim
    from edgehub.agent.tensors import normalize_dim

    named = normalize_dim(dim)
    return named if isinstance(named, str) else None
