"""Reading an ``.npz`` in one read per array. Standard library and numpy.

``numpy.load`` reads an array of an ``.npz`` through ``zipfile`` in 256 KiB pieces, each copied
twice; a dataset or a model's stacked outputs (tens of MiB) then take longer to read than to
hash. `read_npz` reads every ``.npy`` member that is stored uncompressed (as `save_npz` and
``numpy.savez`` write them) straight from the file at its offset, into its array; a compressed,
encrypted or otherwise unusual member makes it read the whole file through ``numpy.load``.
Object (pickled) arrays are refused either way, with numpy's own ``ValueError``.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import numpy as np

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_LOCAL_MAGIC = b"PK\x03\x04"


def read_npz(path: Path, mapped: bool = False) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path`` keyed by name (raises what ``numpy.load`` raises
    on a damaged or pickled file). ``mapped``: plain members are mapped copy-on-write, not
    read, so their pages are those of the file's cache (only for a file nobody else writes:
    one cut short meanwhile kills the process that reads it)."""
    import numpy as np

    with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
        members = archive.infolist()
        arrays: dict[str, Any] = {}
        for info in members:
            if not info.filename.endswith(".npy"):
                break
            array = _stored(raw, info, mapped)
            if array is None:
                break
            arrays[info.filename[:-4]] = array
        else:
            return arrays
    with np.load(str(path), allow_pickle=False) as loaded:
        return {key: loaded[key] for key in loaded.files}


def _stored(raw: BinaryIO, info: zipfile.ZipInfo, mapped: bool = False) -> np.ndarray | None:
    """The array of member ``info`` read in place, or None where it is not a plain stored
    ``.npy`` whose header and size agree."""
    import numpy as np

    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        return None
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
        version = np.lib.format.read_magic(raw)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(raw)
        else:
            return None
    except ValueError:
        return None  # numpy.load reports it
    if dtype.hasobject:
        raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
    count = 1
    for size in shape:
        count *= int(size)
    if raw.tell() - start + count * dtype.itemsize != info.file_size:
        return None
    if mapped and count:
        try:
            found = np.memmap(raw, dtype=dtype, mode="c", offset=raw.tell(), shape=(count,))
        except (ValueError, OSError):
            return None  # numpy.load reports it
        array = np.asarray(found)
    else:
        array = np.fromfile(raw, dtype=dtype, count=count)
    if array.size != count:
        return None
    shaped: np.ndarray = array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)
    return shaped
