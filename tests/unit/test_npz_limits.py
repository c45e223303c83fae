"""An ``.npz`` from a device is bounded by what its arrays unpack to, before anything reads it
(`check_unpacked_size`), with archives crafted here as a hostile device would send them. The
path from a real device: tests/integration/test_device_answers.py."""

from __future__ import annotations

import struct
import time
import zipfile
from pathlib import Path

import pytest

from edgehub.errors import DeviceOutputError, InputDataError
from edgehub.limits import FetchLimits
from edgehub.toolchains.npz_arrays import check_unpacked_size, npz_signature
from edgehub.toolchains.tensors import load_npz


def _npy_header(shape: tuple[int, ...]) -> bytes:
    text = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"
    text += " " * (-(len(text) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode()


def _bomb(path: Path, arrays: int, mib: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for index in range(arrays):
            with archive.open(f"a{index}.npy", "w", force_zip64=True) as member:
                member.write(_npy_header(((mib << 20) // 4,)))
                for _ in range(mib):
                    member.write(bytes(1 << 20))
    return path


def test_an_array_unpacking_past_the_file_limit_is_refused(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "out.npz", 1, 32)
    assert bomb.stat().st_size < 1 << 20  # small on the wire
    limits = FetchLimits(max_member_bytes=16 << 20)
    with pytest.raises(DeviceOutputError) as refused:
        check_unpacked_size(bomb, "out/out.npz from device 'rpi'", limits)
    assert str(refused.value) == (
        "array 'a0' of out/out.npz from device 'rpi' (32 MiB unpacked) is over the limit of "
        "16 MiB a file; raise EDGEHUB_FETCH_MAX_MEMBER_BYTES to accept it"
    )
    check_unpacked_size(bomb, "out/out.npz", FetchLimits(max_member_bytes=64 << 20))


def test_arrays_unpacking_past_the_total_limit_are_refused(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "out.npz", 3, 4)
    with pytest.raises(DeviceOutputError, match=r"\(12 MiB unpacked\).*EDGEHUB_FETCH_MAX_BYTES"):
        check_unpacked_size(bomb, "out/out.npz", FetchLimits(max_bytes=8 << 20))


def test_a_member_bigger_than_its_stated_size_never_unpacks_past_it(tmp_path: Path) -> None:
    """The check trusts the sizes the archive states: a member whose data runs on past its
    stated size is cut there by the reader (and fails its checksum), never read in full."""
    honest = _bomb(tmp_path / "honest.npz", 1, 8)
    data = bytearray(honest.read_bytes())
    entry = data.rfind(b"PK\x01\x02")  # the central directory's entry: its size at +24
    assert struct.unpack_from("<I", data, entry + 24)[0] == (8 << 20) + 128
    struct.pack_into("<I", data, entry + 24, 4096)
    liar = tmp_path / "liar.npz"
    liar.write_bytes(bytes(data))
    check_unpacked_size(liar, "out/liar.npz", FetchLimits(max_member_bytes=1 << 20))
    read = 0
    with (
        zipfile.ZipFile(liar) as archive,
        archive.open("a0.npy") as member,
        pytest.raises(zipfile.BadZipFile, match="CRC"),
    ):
        while chunk := member.read(1024):
            read += len(chunk)
    assert read <= 4096
    with pytest.raises(InputDataError, match=r"not a readable \.npz"):
        load_npz(liar)


def test_a_huge_npy_header_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "header.npz"
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("a.npy", "w", force_zip64=True) as member,
    ):
        member.write(b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0))
        for _ in range(64):
            member.write(b" " * (1 << 20))
    started = time.monotonic()
    assert npz_signature(path) is None
    assert time.monotonic() - started < 30
