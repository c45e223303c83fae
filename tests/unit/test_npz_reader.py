"""`read_npz` (one read per stored array) gives what `numpy.load` gives, and refuses what it
refuses; `share_file` places a file in a warm container's channel without following links."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from edgehub.agent.npz import read_npz
from edgehub.runners.docker.channel import CHANNEL_MOUNT, SHARED, share_file


def _numpy(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as loaded:
        return {key: loaded[key] for key in loaded.files}


@pytest.mark.parametrize("compressed", [False, True])
def test_read_npz_matches_numpy(tmp_path: Path, compressed: bool) -> None:
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
    found, expected = read_npz(path), _numpy(path)
    assert list(found) == list(expected) == list(arrays)
    for name, array in expected.items():
        assert found[name].dtype == array.dtype and found[name].shape == array.shape
        assert np.array_equal(found[name], array)


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
    digest = "ab" * 32
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
