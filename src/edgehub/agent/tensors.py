"""Tensor signatures, .npz I/O (never with pickle) and input checks against a model signature.

A dimension is an ``int`` (fixed), a ``str`` (a symbolic dimension such as ``"N"``) or ``None``
(dynamic without a name; written ``"?"`` in JSON and messages). A shape of ``None`` means the
rank is unknown. Exporters write unknown dims as ``"?"``, ``""`` or a number (``"-1"``): these
name nothing (see :func:`is_named_dim`), so each is its own unknown, never tied to another.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from .atomic import replacing
from .protocol import InputDataError, UsageError

if TYPE_CHECKING:
    import numpy as np

Dim = Union[int, str, None]
Shape = Optional[List[Dim]]
Arrays = Dict[str, "np.ndarray"]

# ONNX TensorProto.DataType values -> numpy dtype names (strings are "str": unicode or objects).
ONNX_ELEM_TYPES = dict(enumerate((
    "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "str", "bool", "float16",
    "float64", "uint32", "uint64", "complex64", "complex128", "bfloat16"), start=1))  # fmt: skip
# ORT NodeArg.type names that are not the numpy dtype's
_ORT_NAMES = {"float": "float32", "double": "float64", "string": "str"}


def dtype_from_ort(type_string: str) -> str:
    """``"tensor(float)"`` -> ``"float32"``; other types keep their ORT spelling."""
    if type_string.startswith("tensor(") and type_string.endswith(")"):
        inner = type_string[len("tensor(") : -1]
        return _ORT_NAMES.get(inner, inner)
    return type_string


_UNNAMED = re.compile(r"\s*(\?+|[+-]?[0-9.]*)\s*")


def is_named_dim(param: str) -> bool:
    """Whether a ``dim_param`` names a dimension that ties the dims sharing it (``"batch"``);
    ``"?"``, ``""`` and numeric-looking ones (``"-1"``) stand for "unknown" and tie nothing."""
    return _UNNAMED.fullmatch(param) is None


def normalize_dim(dim: Any) -> Dim:
    if isinstance(dim, bool):
        return None
    if isinstance(dim, int):
        return dim if dim >= 0 else None
    if isinstance(dim, str) and is_named_dim(dim):
        return dim
    return None


def positive_ints(value: Any) -> bool:
    """Whether ``value`` is a list of positive ints (a bool is not one)."""
    return isinstance(value, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value
    )


def format_dim(dim: Dim) -> int | str:
    return "?" if dim is None else dim


class TensorSpec:
    """A tensor's name, dtype and shape (a plain class: see `~.protocol.CommandOutput`)."""

    def __init__(
        self, name: str, dtype: str, shape: Shape, values_below: int | None = None
    ) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        # integer inputs that index a table (an embedding's rows): the table's size, which
        # random values stay below (see `models.index_limits`)
        self.values_below = values_below

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorSpec):
            return NotImplemented
        return (self.name, self.dtype, self.shape) == (other.name, other.dtype, other.shape)

    def __repr__(self) -> str:
        return f"TensorSpec(name={self.name!r}, dtype={self.dtype!r}, shape={self.shape!r})"

    @classmethod
    def from_ort(cls, node_arg: Any) -> TensorSpec:
        raw = getattr(node_arg, "shape", None)
        shape = [normalize_dim(d) for d in raw] if isinstance(raw, (list, tuple)) else None
        return cls(str(node_arg.name), dtype_from_ort(str(node_arg.type)), shape)

    def to_json(self) -> dict[str, Any]:
        shape = None if self.shape is None else [format_dim(d) for d in self.shape]
        record: dict[str, Any] = {"name": self.name, "dtype": self.dtype, "shape": shape}
        if self.values_below is not None:
            record["values_below"] = self.values_below
        return record

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.name}: {self.dtype}[<unknown rank>]"
        return f"{self.name}: {self.dtype}{_shape_str([format_dim(d) for d in self.shape])}"

    @property
    def is_dynamic(self) -> bool:
        return self.shape is None or any(not isinstance(d, int) for d in self.shape)


def describe_specs(specs: Sequence[TensorSpec]) -> str:
    return ", ".join(s.describe() for s in specs)


def _shape_str(shape: Sequence[int | str]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def dtype_matches(array: np.ndarray, dtype: str) -> bool:
    if dtype == "str":
        return array.dtype.kind in ("U", "S", "O")
    return bool(array.dtype.name == dtype)


def shape_problems(
    name: str, shape: Sequence[int], spec: TensorSpec, bindings: dict[str, tuple[int, str]]
) -> list[str]:
    """Why ``shape`` does not fit ``spec`` (symbolic dims bound consistently across inputs)."""
    if spec.shape is None:
        return []
    if len(shape) != len(spec.shape):
        return [
            f"'{name}' has shape {_shape_str(shape)} (rank {len(shape)}), "
            f"expected rank {len(spec.shape)}"
        ]
    problems = []
    for axis, (got, want) in enumerate(zip(shape, spec.shape)):
        if isinstance(want, int):
            if got != want:
                problems.append(
                    f"'{name}' has shape {_shape_str(shape)}, dim {axis} must be {want}"
                )
        elif isinstance(want, str):
            bound = bindings.get(want)
            if bound is None:
                bindings[want] = (got, name)
            elif bound[0] != got:
                problems.append(
                    f"'{name}' dim {axis} is {got} but '{want}' is {bound[0]} in '{bound[1]}'"
                )
    return problems


def check_arrays(
    arrays: Mapping[str, np.ndarray], specs: Sequence[TensorSpec], what: str = "input"
) -> None:
    """Raise InputDataError naming every mismatch and listing the expected inputs."""
    names = [s.name for s in specs]
    problems: list[str] = []
    missing = [n for n in names if n not in arrays]
    unexpected = [k for k in arrays if k not in names]
    if missing:
        problems.append("missing " + ", ".join(f"'{n}'" for n in missing))
    if unexpected:
        problems.append("unexpected " + ", ".join(f"'{n}'" for n in unexpected))
    bindings: dict[str, tuple[int, str]] = {}
    for spec in specs:
        if spec.name not in arrays:
            continue
        array = arrays[spec.name]
        if not dtype_matches(array, spec.dtype):
            problems.append(f"'{spec.name}' has dtype {array.dtype.name}, expected {spec.dtype}")
        problems.extend(shape_problems(spec.name, array.shape, spec, bindings))
    if problems:
        count = None if missing or unexpected else _stacked_count(arrays, specs)
        stacked = (
            f". They look like {count} samples stacked on a leading axis where one sample is "
            "expected: pass a directory of .npz files, one sample each (eval's dataset takes "
            "the stacked file as it is)"
            if count
            else ""
        )
        raise InputDataError(
            f"{what} data does not match the model: {'; '.join(problems)}. "
            f"Expected inputs: {describe_specs(specs)}{stacked}"
        )


def _stacked_count(arrays: Mapping[str, np.ndarray], specs: Sequence[TensorSpec]) -> int | None:
    """N where every array is N > 1 samples of its input stacked on a leading axis: a new
    one, or the input's own batch dim, dynamic or 1 (as `~.inputs.split_stacked` reads a
    dataset)."""
    leading = {array.shape[0] if array.ndim else 0 for array in arrays.values()}
    if len(leading) != 1 or min(leading) < 2:
        return None
    bindings: dict[str, tuple[int, str]] = {}
    for spec in specs:
        array = arrays[spec.name]
        if spec.shape is None or not dtype_matches(array, spec.dtype):
            return None
        sample = array.shape[1:]
        lead = spec.shape[0] if spec.shape else 0
        if array.ndim == len(spec.shape) and (lead == 1 or not isinstance(lead, int)):
            sample = (1, *sample)  # stacked on the input's own batch dim: 1, or dynamic
        if shape_problems(spec.name, sample, spec, bindings):
            return None
    return leading.pop()


def concrete_shape(
    spec: TensorSpec,
    override: Sequence[int] | None = None,
    symbols: Mapping[str, int] | None = None,
) -> list[int]:
    """A shape for generated data: ``override`` if given, else symbolic dims from ``symbols``
    (values other inputs' shapes gave them), else dynamic dims set to 1."""
    if override is not None:
        return [int(d) for d in override]
    if spec.shape is None:
        raise UsageError(
            f"input '{spec.name}' has an unknown rank, so random data cannot be generated: "
            "pass input data (an .npz keyed by input name) or an input_shape"
        )
    symbols = symbols or {}
    return [
        d if isinstance(d, int) else (symbols.get(d, 1) if isinstance(d, str) else 1)
        for d in spec.shape
    ]


def random_array(spec: TensorSpec, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """Random data of the spec's dtype: normal floats, small non-negative ints, full-range 8-bit.
    A shape larger than this machine's (or container's) memory is a `UsageError` naming the
    input and its size, before anything is allocated."""
    import numpy as np

    from .resources import memory_ceiling

    count = math.prod(max(int(dim), 0) for dim in shape)
    try:
        needed = count * np.dtype(spec.dtype).itemsize
    except TypeError:
        needed = count * 8
    ceiling = memory_ceiling()
    problem = None
    if ceiling is not None and needed > ceiling:
        problem = f"more than the {ceiling / (1 << 30):.3g} GiB of memory here"
    else:
        try:
            return _random_array(spec, tuple(int(d) for d in shape), rng)
        except (MemoryError, ValueError) as error:
            problem = f"cannot be allocated here ({type(error).__name__})"
    raise UsageError(
        f"input '{spec.name}' of shape {_shape_str([int(d) for d in shape])} needs "
        f"{needed / (1 << 30):.3g} GiB ({spec.dtype}), {problem}; give a smaller input_shape"
    )


def _random_array(spec: TensorSpec, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    import numpy as np

    dtype = spec.dtype
    if dtype in ("float32", "float64"):  # drawn in the dtype itself: no float64 copy
        return rng.standard_normal(size, dtype=np.dtype(dtype))
    if dtype == "float16":
        return rng.standard_normal(size, dtype=np.float32).astype(dtype)
    integers = ("int8", "uint8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
    if dtype in integers and spec.values_below is not None:  # indices into a table
        return rng.integers(0, max(1, min(10, spec.values_below)), size=size).astype(dtype)
    if dtype in ("int8", "uint8"):
        info = np.iinfo(dtype)
        return rng.integers(int(info.min), int(info.max) + 1, size=size).astype(dtype)
    if dtype in integers:
        return rng.integers(0, 10, size=size).astype(dtype)
    if dtype == "bool":
        return rng.random(size) < 0.5
    if dtype == "str":
        return np.full(size, "a", dtype=object)
    raise UsageError(
        f"cannot generate random data for input '{spec.name}' of type {dtype}: "
        "pass input data (an .npz keyed by input name)"
    )


def random_inputs(
    specs: Sequence[TensorSpec],
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> tuple[Arrays, list[str]]:
    """Random feeds for ``specs``; also returns the inputs whose dynamic dims were set to 1."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shapes = shapes or {}
    symbols: dict[str, int] = {}
    for spec in specs:  # a symbol fixed through one input's shape applies to every input
        override = shapes.get(spec.name)
        if override is not None and spec.shape is not None:
            for dim, size in zip(spec.shape, override):
                if isinstance(dim, str):
                    symbols.setdefault(dim, int(size))
    feeds: Arrays = {}
    defaulted: list[str] = []
    for spec in specs:
        override = shapes.get(spec.name)
        shape = concrete_shape(spec, override, symbols)
        if override is None and (
            spec.shape is None
            or any(d is None or (isinstance(d, str) and d not in symbols) for d in spec.shape)
        ):
            defaulted.append(spec.name)
        feeds[spec.name] = random_array(spec, shape, rng)
    return feeds, defaulted


def load_arrays(
    path: str | Path, what: str = "input", mapped: bool = False, max_unpacked: int | None = None
) -> Arrays | np.ndarray:
    """Load an .npz (dict of arrays) or .npy (one array) without ever unpickling objects;
    ``mapped``: an .npz's plain members are mapped, not read; ``max_unpacked``: the most its
    compressed members may unpack to (see `read_npz`)."""
    import zipfile

    import numpy as np

    from .npz import NpzLimitError, read_npz

    p = Path(path)
    if not p.is_file():
        raise InputDataError(f"{what} file '{p}' does not exist: check the path")
    pickled = InputDataError(
        f"{what} file '{p}' holds pickled (object) arrays, which the agent refuses to load: "
        "save plain numeric arrays with numpy.savez"
    )
    try:
        loaded = (
            read_npz(p, mapped, max_unpacked)
            if zipfile.is_zipfile(p)
            else np.load(str(p), allow_pickle=False)
        )
    except NpzLimitError as exc:
        raise InputDataError(f"{what} file '{p}' is too large: {exc}") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        if isinstance(exc, ValueError) and "pickle" in str(exc).lower():
            raise pickled from exc
        raise InputDataError(f"{what} file '{p}' is not a .npz/.npy file: {exc}") from exc
    if isinstance(loaded, (np.ndarray, dict)):
        return loaded
    try:
        with loaded:
            return {key: loaded[key] for key in loaded.files}
    except ValueError as exc:
        raise pickled from exc
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise InputDataError(f"{what} file '{p}' is damaged: {exc}") from exc


def load_inputs(
    path: str | Path,
    specs: Sequence[TensorSpec],
    what: str = "input",
    max_unpacked: int | None = None,
) -> Arrays:
    """Load model inputs from a .npz keyed by input name (a bare .npy for a one-input model);
    ``max_unpacked``: see `load_arrays`."""
    loaded = by_name(
        load_arrays(path, what, max_unpacked=max_unpacked), specs, f"{what} file '{path}'"
    )
    check_arrays(loaded, specs, what)
    return loaded


def by_name(loaded: Arrays | np.ndarray, specs: Sequence[TensorSpec], where: str) -> Arrays:
    """The arrays ``loaded`` (a dict, or one array for a one-input model) keyed by input name;
    ``where`` names the file in the error (``input file 'x.npy'``)."""
    import numpy as np

    if not isinstance(loaded, np.ndarray):
        return loaded
    if len(specs) != 1:
        raise InputDataError(
            f"{where} is a single .npy array but the model has {len(specs)} "
            f"inputs: save an .npz keyed by input name ({describe_specs(specs)})"
        )
    return {specs[0].name: loaded}


def save_npz(path: str | Path, arrays: Mapping[str, Any], compress: bool = True) -> None:
    """Write a .npz keyed by name (any name, even ``file``), atomically; compressed unless
    ``compress`` is false (large float arrays barely shrink and cost seconds to deflate)."""
    import zipfile

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    # job data: atomic, not flushed to disk (`.atomic`); two `with`s: Python 3.8 has no (...)
    with replacing(target, durable=False) as tmp:  # noqa: SIM117
        with zipfile.ZipFile(tmp, "w", compression=method, allowZip64=True) as zf:
            for name, array in arrays.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                    _write_npy(fh, array)


def _write_npy(handle: Any, value: Any) -> None:
    """``numpy.lib.format.write_array`` (no pickles): for a C-ordered array of numbers or
    strings, the same header and then the array's own memory, not numpy's 16 MiB copies of it
    (fresh memory, slow to come by in a VM); any other array through numpy itself."""
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind == "O":  # objects (strings) are stored as strings, never pickled
        array = array.astype(str)
    fmt = np.lib.format
    plain = array.dtype.kind in "biufcSU" and array.dtype.names is None
    if not (plain and array.flags.c_contiguous and array.dtype.itemsize):
        fmt.write_array(handle, array, allow_pickle=False)
        return
    header = fmt.header_data_from_array_1_0(array)
    try:
        fmt.write_array_header_1_0(handle, header)
    except ValueError:  # a header too long for version 1.0, as numpy then writes it
        fmt.write_array_header_2_0(handle, header)
    handle.write(array.reshape(-1).view(np.uint8))


def array_info(name: str, array: np.ndarray) -> dict[str, Any]:
    return {"name": name, "dtype": array.dtype.name, "shape": [int(d) for d in array.shape]}
