"""Reading ``.npz`` files without numpy where the headers say enough: `NpzArrays`, a ``dict``
that loads the file on the first look at its contents (a caller that only reports dtypes and
shapes never pays for numpy); `check_unpacked_size`, bounding what a device's ``.npz`` expands
to; and `plain_npz`, whether `~edgehub.toolchains.tensors.load_npz` would read a file.
"""

from __future__ import annotations

import ast
import functools
import struct
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from edgehub.limits import FetchLimits, human_size

_MAGIC = b"\x93NUMPY"
_KINDS = {"f": "float", "i": "int", "u": "uint", "c": "complex"}
_MAX_HEADER = 1 << 20  # numpy itself refuses headers over 10,000 bytes unless told
F = TypeVar("F", bound=Callable[..., Any])


def check_unpacked_size(path: Path, what: str, limits: FetchLimits | None = None) -> None:
    """Refuse (`~edgehub.errors.DeviceOutputError`) the ``.npz`` at ``path`` (``what`` names
    it) where its archive says an array, or all together, unpack past ``limits`` (by default
    `FetchLimits.from_env`). A file that is not a zip archive passes, for its reader to report."""
    limits = limits or FetchLimits.from_env()
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile):
        return
    total = 0
    for member in members:
        name = member.filename.removesuffix(".npy")
        size = member.file_size
        limits.check_member(size, f"array {name[:80]!r} of {what} ({human_size(size)} unpacked)")
        total += size
    limits.check_total(total, f"{what} ({human_size(total)} unpacked)")


def npz_signature(path: Path) -> dict[str, tuple[str, tuple[int, ...]]] | None:
    """``{name: (dtype, shape)}`` of the arrays in ``path``, read from the ``.npy`` headers
    (dtype named as numpy names it); None where a header is not a plain one."""
    found: dict[str, tuple[str, tuple[int, ...]]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if not member.endswith(".npy"):
                    return None
                with archive.open(member) as handle:
                    head = _npy_header(handle, (b"\x01\0", b"\x02\0", b"\x03\0"))
                if head is None:
                    return None
                descr, shape = head[1].get("descr"), head[1].get("shape")
                dtype = _dtype_name(descr) if isinstance(descr, str) else None
                if dtype is None or not isinstance(shape, tuple):
                    return None
                found[member[: -len(".npy")]] = (dtype, tuple(int(d) for d in shape))
    except (OSError, zipfile.BadZipFile, ValueError, SyntaxError):
        return None
    return found


def plain_npz(path: Path, max_unpacked: int | None = None) -> bool:
    """Whether the ``.npz`` at ``path`` is one `~edgehub.agent.npz.read_npz` reads, as far as
    its zip directory and ``.npy`` headers tell (compressed arrays within ``max_unpacked``;
    None: this machine's memory). False means "read it to know", never "bad"."""
    from edgehub.agent.npz import NpzLimitError, check_unpacked

    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            check_unpacked(path, members, max_unpacked)
            stored = sum(m.file_size for m in members if m.compress_type == zipfile.ZIP_STORED)
            if stored > path.stat().st_size:
                return False
            for member in members:
                if not (
                    member.filename.endswith(".npy")
                    and not member.flag_bits & 0x1
                    and member.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
                ):
                    return False
                with archive.open(member) as handle:
                    found = _npy_layout(handle)
                if found is None or found[0] + found[1] > member.file_size:
                    return False
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, NpzLimitError, ValueError):
        return False
    except (SyntaxError, RuntimeError, NotImplementedError):  # a header or member we do not read
        return False
    return True


def _npy_header(handle: Any, versions: tuple[bytes, ...]) -> tuple[int, dict[str, Any]] | None:
    """(where the data starts, the header) of the ``.npy`` at ``handle`` where it is of one of
    the format ``versions`` (major, minor) and its header a dict; else None."""
    start = handle.read(12)
    if len(start) < 12 or not start.startswith(_MAGIC) or start[6:8] not in versions:
        return None
    if start[6] == 1:
        (size,) = struct.unpack("<H", start[8:10])
        begin, text = 10, start[10:] + handle.read(max(size - 2, 0))
    else:
        (size,) = struct.unpack("<I", start[8:12])
        if size > _MAX_HEADER:
            return None
        begin, text = 12, handle.read(size)
    if len(text) != size:
        return None
    header = ast.literal_eval(text.decode("latin1"))
    return (begin + size, header) if isinstance(header, dict) else None


def _npy_layout(handle: Any) -> tuple[int, int] | None:
    """(header length, data length) of the ``.npy`` at ``handle`` where it is of format 1.0 or
    2.0 of a plain dtype (as `~edgehub.agent.npz.read_npz` takes), else None."""
    found = _npy_header(handle, (b"\x01\0", b"\x02\0"))
    if found is None or set(found[1]) != {"descr", "fortran_order", "shape"}:
        return None
    header = found[1]
    descr, shape = header["descr"], header["shape"]
    if not isinstance(descr, str) or not isinstance(header["fortran_order"], bool):
        return None
    if not isinstance(shape, tuple) or not all(type(d) is int and d >= 0 for d in shape):
        return None
    kind, digits = descr.lstrip("<>|=")[:1], descr.lstrip("<>|=")[1:]
    if _dtype_name(descr) is None or not digits.isdigit():
        return None
    count = int(digits) * (4 if kind == "U" else 1)
    for dim in shape:
        count *= dim
    return found[0], count


def _dtype_name(descr: str) -> str | None:
    """numpy's name for a simple dtype descriptor (``<f4`` -> ``float32``)."""
    code = descr.lstrip("<>|=")
    kind, digits = code[:1], code[1:]
    if not digits.isdigit():
        return None
    foreign = ">" if sys.byteorder == "little" else "<"
    if descr.startswith(foreign) and kind in _KINDS and digits != "1":
        return descr  # numpy names a non-native byte order by its descriptor
    if kind == "b" and digits == "1":
        return "bool"
    if kind in _KINDS:
        return f"{_KINDS[kind]}{int(digits) * 8}"
    if kind == "U":
        return descr if descr[0] in "<>" else f"<{code}"
    return None


def _loads(method: F) -> F:
    """Make ``method`` read the file first."""

    @functools.wraps(method)
    def loaded(self: NpzArrays, *args: Any, **kwargs: Any) -> Any:
        self._load()
        return method(self, *args, **kwargs)

    return loaded  # type: ignore[return-value]


class NpzArrays(dict):  # type: ignore[type-arg]
    """The arrays of the ``.npz`` at ``path`` by name, read on first use (a plain ``dict``
    from then on). Pickled objects are refused, as by `~edgehub.toolchains.tensors.load_npz`."""

    def __init__(self, path: Path, *, max_unpacked: int | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.max_unpacked = max_unpacked  # what its compressed arrays may unpack to (load_npz)
        self._loaded = False

    def _load(self) -> None:
        if not self._loaded:
            from edgehub.toolchains.tensors import load_npz

            dict.update(self, load_npz(self.path, max_unpacked=self.max_unpacked))
            self._loaded = True

    def unread_file(self) -> Path | None:
        """The file these arrays are, while nothing has read (and so nothing has changed)
        them here: it can be passed on as it is. None once they were read."""
        return None if self._loaded else self.path

    def signature(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """``{name: (dtype, shape)}`` of the arrays, without reading them where the headers
        say it all."""
        if not self._loaded:
            found = npz_signature(self.path)
            if found is not None:
                return found
            self._load()
        return {name: (str(a.dtype), tuple(a.shape)) for name, a in dict.items(self)}

    def __reduce__(self) -> Any:
        self._load()
        return (dict, (dict(dict.items(self)),))


# every way of looking at or changing the arrays reads the file first
_LOADING = ("__getitem__", "__iter__", "__len__", "__contains__", "__eq__", "__ne__", "__or__",
            "__ror__", "__ior__", "__reversed__", "__setitem__", "__delitem__", "__repr__",
            "keys", "values", "items", "get", "copy", "pop", "popitem", "setdefault", "update",
            "clear")  # fmt: skip
for _name in _LOADING:
    setattr(NpzArrays, _name, _loads(getattr(dict, _name)))
del _name
