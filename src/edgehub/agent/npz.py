"""Reading an ``.npz`` in one read per array, bounded in memory. Standard library and numpy.

``numpy.load`` reads an array of an ``.npz`` through ``zipfile`` in 256 KiB pieces, each copied
twice; a dataset or a model's stacked outputs (tens of MiB) then take longer to read than to
hash. `read_npz` reads every ``.npy`` member that is stored uncompressed (as `save_npz` and
``numpy.savez`` write them) straight from the file at its offset, into its array.

A compressed member is unpacked as a stream into an array allocated from its ``.npy`` header,
and only after the archive's central directory and that header agree: what the members declare
they unpack to is checked against a limit before any byte is unpacked (a 2 MB archive of zeros
may declare gigabytes), the header's shape times its dtype must fit in the member's declared
size, and unpacking stops there (`zipfile` reads no more than the declared size and checks its
CRC). Object (pickled) arrays are refused, with numpy's own ``ValueError`` message; every other
problem is a ``ValueError`` too (`NpzLimitError` for a limit).
"""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import numpy as np

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_LOCAL_MAGIC = b"PK\x03\x04"
_PIECE = 4 << 20  # bytes unpacked at a time
PICKLED = "Object arrays cannot be loaded when allow_pickle=False"


class NpzLimitError(ValueError):
    """An ``.npz`` whose arrays would unpack to more than the limit allows."""


def read_npz(
    path: Path, mapped: bool = False, max_unpacked: int | None = None
) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path`` keyed by name (raises ``ValueError``, ``OSError``
    or ``zipfile.BadZipFile`` on a damaged, pickled or oversized file). ``mapped``: plain
    members are mapped copy-on-write, not read, so their pages are those of the file's cache
    (only for a file nobody else writes: one cut short meanwhile kills the process that reads
    it). ``max_unpacked``: the most bytes the compressed members may unpack to, together
    (`NpzLimitError` above it, before anything is unpacked); None: this machine's memory."""
    with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
        members = archive.infolist()
        check_unpacked(path, members, max_unpacked)
        on_disk = os.fstat(raw.fileno()).st_size
        stored = sum(m.file_size for m in members if m.compress_type == zipfile.ZIP_STORED)
        if stored > on_disk:  # members sharing their bytes: each would be read again
            raise ValueError(
                f"its stored members declare {stored} bytes, more than the file's {on_disk}: "
                "the archive is damaged"
            )
        arrays: dict[str, Any] = {}
        for info in members:
            if not info.filename.endswith(".npy"):
                raise ValueError(f"member {info.filename[:80]!r} is not an .npy array")
            if info.flag_bits & 0x1:
                raise ValueError(f"member {info.filename[:80]!r} is encrypted")
            array = None
            if info.compress_type == zipfile.ZIP_STORED:
                array = _stored(raw, info, mapped)
            if array is None:
                array = _unpacked(archive, info)
            arrays[info.filename[:-4]] = array
        return arrays


def check_unpacked(path: Path, members: Any, limit: int | None = None) -> int:
    """The bytes the compressed ``members`` (`zipfile.ZipInfo`) of ``path`` declare they
    unpack to, together; `NpzLimitError` where that is over ``limit`` (None: this machine's
    memory, where it can be told)."""
    total: int = sum(m.file_size for m in members if m.compress_type != zipfile.ZIP_STORED)
    if not total:
        return 0  # nothing compressed: no limit to look up (memory_ceiling reads the cgroup's)
    from .resources import memory_ceiling

    cap = memory_ceiling() if limit is None else limit
    if cap is not None and total > cap:
        where = "this machine's memory" if limit is None else "the limit"
        raise NpzLimitError(
            f"{path.name}: its compressed arrays unpack to {_size(total)}, over {where} of "
            f"{_size(cap)}; save them uncompressed (numpy.savez, not savez_compressed)"
        )
    return total


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} bytes"  # pragma: no cover


def _header(handle: Any) -> Any:
    """(shape, fortran order, dtype, element count) of the ``.npy`` header at ``handle``'s
    position; a ``ValueError`` for an object (pickled) array."""
    import math

    import numpy as np

    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported")
    if dtype.hasobject:
        raise ValueError(PICKLED)
    return shape, fortran, dtype, math.prod(int(size) for size in shape)


def _shaped(array: np.ndarray, shape: Any, fortran: bool) -> np.ndarray:
    """The flat ``array`` in its header's ``shape`` and order."""
    shaped: np.ndarray = array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)
    return shaped


def _unpacked(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """The array of member ``info`` unpacked as a stream into an array its header sizes,
    after that size is found within the member's declared one."""
    import numpy as np

    name = info.filename[:80]
    with archive.open(info) as handle:
        shape, fortran, dtype, count = _header(handle)
        need = count * dtype.itemsize
        if need > info.file_size - handle.tell():
            raise ValueError(
                f"member {name!r}: its header declares {need} bytes of data but the archive "
                f"holds {info.file_size - handle.tell()}: the archive is damaged"
            )
        array = np.empty(count, dtype=dtype)
        view = array.view(np.uint8).reshape(-1).data
        filled = 0
        while filled < need:
            piece = handle.read(min(_PIECE, need - filled))
            if not piece:
                raise ValueError(f"member {name!r} ends before its data: the archive is damaged")
            view[filled : filled + len(piece)] = piece
            filled += len(piece)
    return _shaped(array, shape, fortran)


def _stored(raw: BinaryIO, info: zipfile.ZipInfo, mapped: bool = False) -> np.ndarray | None:
    """The array of member ``info`` read in place, or None where it is not a plain stored
    ``.npy`` whose header and size agree."""
    import numpy as np

    raw.seek(info.header_offset)
    head = raw.read(_LOCAL_HEADER.size)
    if len(head) != _LOCAL_HEADER.size:
        return None
    magic, name_length, extra_length = _LOCAL_HEADER.unpack(head)
    if magic != _LOCAL_MAGIC:
        return None
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    raw.seek(start)
    try:
        shape, fortran, dtype, count = _header(raw)
    except ValueError:
        return None  # read as a stream, which reports it
    if raw.tell() - start + count * dtype.itemsize != info.file_size:
        return None
    if mapped and count:
        try:
            found = np.memmap(raw, dtype=dtype, mode="c", offset=raw.tell(), shape=(count,))
        except (ValueError, OSError):
            return None  # read as a stream, which reports it
        array = np.asarray(found)
    else:
        array = np.fromfile(raw, dtype=dtype, count=count)
    return _shaped(array, shape, fortran) if array.size == count else None
