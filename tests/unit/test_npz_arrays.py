"""`NpzArrays`: an invoker's outputs, read from their .npz only when looked at."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.errors import InputDataError
from edgehub.toolchains.npz_arrays import NpzArrays, npz_signature

ARRAYS = {
    "f32": np.zeros((1, 10), np.float32),
    "f16": np.ones((2, 3, 4), np.float16),
    "i8": np.arange(6, dtype=np.int8).reshape(2, 3),
    "u16": np.arange(4, dtype=np.uint16),
    "i64": np.array(7, dtype=np.int64),
    "flag": np.array([True, False]),
    "c64": np.zeros(3, np.complex64),
    "text": np.array(["a", "bcd"]),
    "big_endian": np.arange(3, dtype=">f8"),
}


@pytest.fixture
def npz(tmp_path: Path) -> Path:
    path = tmp_path / "out.npz"
    np.savez(path, **ARRAYS)
    return path


def test_signature_from_the_headers_matches_numpy(npz: Path) -> None:
    expected = {name: (str(a.dtype), tuple(a.shape)) for name, a in ARRAYS.items()}
    assert npz_signature(npz) == expected
    lazy = NpzArrays(npz)
    assert lazy.signature() == expected
    assert not lazy._loaded  # the headers said it all


def test_a_file_numpy_cannot_describe_by_header_is_read(tmp_path: Path) -> None:
    path = tmp_path / "record.npz"
    np.savez(path, rec=np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))
    assert npz_signature(path) is None
    lazy = NpzArrays(path)
    assert lazy.signature() == {"rec": ("[('a', '<i4'), ('b', '<f8')]", (2,))}
    assert lazy._loaded


def test_it_behaves_as_the_dict_of_arrays(npz: Path) -> None:
    lazy = NpzArrays(npz)
    assert isinstance(lazy, dict)
    assert len(lazy) == len(ARRAYS) and set(lazy) == set(ARRAYS) and "f16" in lazy
    np.testing.assert_array_equal(lazy["i8"], ARRAYS["i8"])
    assert {**lazy}.keys() == ARRAYS.keys()
    assert dict(NpzArrays(npz)).keys() == ARRAYS.keys()  # the C fast path sees the contents
    assert {"a": 1} != NpzArrays(npz)  # noqa: SIM300  (a plain dict on the left defers to it)
    again = pickle.loads(pickle.dumps(NpzArrays(npz)))
    assert type(again) is dict and set(again) == set(ARRAYS)
    assert json.dumps(sorted(NpzArrays(npz).keys())) == json.dumps(sorted(ARRAYS))
    copy = NpzArrays(npz).copy()
    assert type(copy) is dict and len(copy) == len(ARRAYS)
    assert "f32" in repr(NpzArrays(npz))


def test_pickled_objects_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "objects.npz"
    np.savez(path, obj=np.array([{"a": 1}], dtype=object))
    with pytest.raises(InputDataError, match=r"not a readable \.npz"):
        len(NpzArrays(path))


def test_a_report_of_lazy_outputs_does_not_import_numpy(npz: Path) -> None:
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from edgehub.ops.reports import _output_signature\n"
        "from edgehub.toolchains.npz_arrays import NpzArrays\n"
        f"print(_output_signature(NpzArrays(Path({str(npz)!r})))['f16'])\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["{'dtype': 'float16', 'shape': [2, 3, 4]}", "False"]
