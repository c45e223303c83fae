"""`read_npz` (one read per stored array) gives what `numpy.load` gives, and refuses what it
refuses; `share_file`, `collect_file` and `discard_outbox` move files through a warm
container's channel (a folder the container may write in) without following its links."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from edgehub.agent.npz import read_npz
from edgehub.errors import DeviceOutputError
from edgehub.runners.docker.channel import (
    CHANNEL_MOUNT,
    OUTBOX,
    SHARED,
    collect_file,
    discard_outbox,
    share_file,
)


def _numpy(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as loaded:
        return {key: loaded[key] for key in loaded.files}


@pytest.mark.parametrize("mapped", [False, True])
@pytest.mark.parametrize("compressed", [False, True])
def test_read_npz_matches_numpy(tmp_path: Path, compressed: bool, mapped: bool) -> None:
    path = tmp_path / "a.npz"
    arrays = {
        "x": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        "fortran": np.asfortranarray(np.arange(12).reshape(3, 4)),
        "empty": np.zeros((0, 5), np.int8),
        "scalar": np.float64(2.5),
        "text": np.array(["ab", "c"]),
        "file": np.array([True, False]),  # a name numpy.savez itself would not take
    }
    from edgehub.agent.tensors import save_npz

    save_npz(path, arrays, compress=compressed)
    before = path.read_bytes()
    found, expected = read_npz(path, mapped), _numpy(path)
    assert list(found) == list(expected) == list(arrays)
    for name, array in expected.items():
        assert found[name].dtype == array.dtype and found[name].shape == array.shape
        assert np.array_equal(found[name], array)
        assert type(found[name]) is np.ndarray
    found["x"][0, 0, 0] = 99  # a mapped array is copy-on-write: the file keeps its bytes
    assert path.read_bytes() == before


def test_save_npz_writes_the_npy_bytes_numpy_writes(tmp_path: Path) -> None:
    from edgehub.agent.tensors import save_npz

    rng = np.random.default_rng(0)
    arrays = {
        "f4": rng.standard_normal((5, 3, 7)).astype(np.float32),
        "big_endian": np.arange(6, dtype=">i8"),
        "scalar": np.array(1.5),
        "empty": np.zeros((0, 2), np.float16),
        "text": np.array(["ab", "c"]),
        "fortran": np.asfortranarray(rng.standard_normal((4, 3))),
        "strided": rng.standard_normal((4, 6))[:, ::2],
        "record": np.zeros(2, dtype=[("a", "f4"), ("b", "i2")]),
    }
    path = tmp_path / "a.npz"
    save_npz(path, arrays, compress=False)
    with zipfile.ZipFile(path) as archive:
        for name, array in arrays.items():
            expected = io.BytesIO()
            np.lib.format.write_array(expected, array, allow_pickle=False)
            assert archive.read(f"{name}.npy") == expected.getvalue(), name


def test_read_npz_refuses_pickles_and_damage(tmp_path: Path) -> None:
    pickled = tmp_path / "p.npz"
    save = np.savez  # allow_pickle is not a parameter numpy's stubs give savez
    save(pickled, o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle"):
        read_npz(pickled)
    truncated = tmp_path / "t.npz"
    np.savez(truncated, x=np.arange(1000.0))
    truncated.write_bytes(truncated.read_bytes()[:-300])
    with pytest.raises((zipfile.BadZipFile, ValueError, OSError, EOFError)):
        read_npz(truncated)


def test_share_file_copies_once_and_never_through_a_link(tmp_path: Path) -> None:
    channel, outside = tmp_path / "channel", tmp_path / "outside"
    channel.mkdir()
    outside.mkdir()
    data = tmp_path / "data.npz"
    np.savez(data, x=np.arange(10.0))
    digest = hashlib.sha256(data.read_bytes()).hexdigest()  # a copy is checked against it
    where, sent = share_file(channel, data, digest)
    assert sent and where == f"{CHANNEL_MOUNT}/{SHARED}/{digest[:32]}.npz"
    copy = channel / SHARED / f"{digest[:32]}.npz"
    assert copy.read_bytes() == data.read_bytes()
    assert share_file(channel, data, digest) == (where, False)  # there already: not again
    # what the container may plant in its channel: a link in the file's place is replaced,
    # never written through; a link in the folder's place is refused
    copy.unlink()
    copy.symlink_to(outside / "victim")
    assert share_file(channel, data, digest)[1]
    assert not (outside / "victim").exists() and not copy.is_symlink()
    (channel / SHARED / copy.name).unlink()
    os.rmdir(channel / SHARED)
    (channel / SHARED).symlink_to(outside)
    with pytest.raises(OSError):
        share_file(channel, data, digest)
    assert list(outside.iterdir()) == []


def test_collect_file_takes_only_a_regular_file_within_limits(tmp_path: Path) -> None:
    channel, outside = tmp_path / "channel", tmp_path / "outside"
    box = channel / OUTBOX / "b1"
    box.mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret"
    secret.write_bytes(b"host only")
    (box / "outputs-0.npz").write_bytes(b"x" * 100)
    local = tmp_path / "here" / "outputs-0.npz"
    collect_file(channel, "b1", "outputs-0.npz", local, max_bytes=100)
    assert local.read_bytes() == b"x" * 100
    assert not (box / "outputs-0.npz").exists()  # taken out of the outbox
    (box / "outputs-0.npz").write_bytes(b"x" * 100)
    with pytest.raises(DeviceOutputError, match="over the 99 accepted"):
        collect_file(channel, "b1", "outputs-0.npz", local, max_bytes=99)
    # what a container may leave instead: a link out, a FIFO (never waited on), nothing
    (box / "link.npz").symlink_to(secret)
    os.mkfifo(box / "fifo.npz")
    for name in ("link.npz", "fifo.npz", "missing.npz"):
        with pytest.raises(DeviceOutputError):
            collect_file(channel, "b1", name, tmp_path / name, max_bytes=1 << 20)
        assert not (tmp_path / name).exists()
    (channel / OUTBOX / "b2").symlink_to(outside)  # a linked box is not entered either
    with pytest.raises(DeviceOutputError):
        collect_file(channel, "b2", "secret", tmp_path / "s", max_bytes=1 << 20)
    (box / "deeper").mkdir()
    (box / "deeper" / "link").symlink_to(outside)
    discard_outbox(channel, "b1")
    discard_outbox(channel, "b2")
    assert list((channel / OUTBOX).iterdir()) == []
    assert secret.read_bytes() == b"host only"  # removed the links, not what they named


def test_shared_files_beyond_the_cap_go_oldest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgehub.runners.docker import channel as module

    monkeypatch.setattr(module, "SHARED_MAX_BYTES", 250)
    (tmp_path / "channel").mkdir()
    for index in range(3):
        data = tmp_path / f"{index}.npz"
        data.write_bytes(bytes([index]) * 100)
        share_file(tmp_path / "channel", data, f"{index}" * 64)
        os.utime(tmp_path / "channel" / SHARED / (str(index) * 32 + ".npz"), (index, index))
    kept = sorted(p.name[0] for p in (tmp_path / "channel" / SHARED).iterdir())
    assert kept == ["1", "2"]  # 300 bytes over a cap of 250: the oldest went
