"""A model or input data must be a regular file (or a directory of samples for inputs): special
files and directories are refused at once, through the real `hub` and the Python API, before
anything opens or copies them; inputs named like numpy's own parameters are kept."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from edgehub.errors import InputDataError, ModelError, StorageError
from edgehub.toolchains.tensors import load_npz, save_npz
from edgehub.user_files import ensure_room, input_data_path, link_or_copy_checked, regular_file

HUB = str(Path(sys.executable).with_name("hub"))


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A FIFO, a listening UNIX socket, a directory and a link to /dev/zero."""
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "model.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    (tmp_path / "folder").mkdir()
    (tmp_path / "zero.onnx").symlink_to("/dev/zero")
    yield {
        "/dev/zero": Path("/dev/zero"),
        "fifo": fifo,
        "socket": sock_path,
        "directory": tmp_path / "folder",
        "link to /dev/zero": tmp_path / "zero.onnx",
        "/proc/self/mem": Path("/proc/self/mem"),  # "regular", but every read fails
    }
    server.close()


def _hub(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run([HUB, *args], capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - start


def _refused(done: subprocess.CompletedProcess[str], took: float, words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert took < 20, f"took {took:.1f} s"  # generous (a busy machine starts hub slowly): no hang
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("hub: error:"), done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "kind", ["/dev/zero", "fifo", "socket", "directory", "link to /dev/zero", "/proc/self/mem"]
)
def test_hub_refuses_a_special_model_at_once(specials: dict[str, Path], kind: str) -> None:
    words = {"fifo": "FIFO", "socket": "a socket", "directory": "a directory"}
    words["/proc/self/mem"] = "the kernel's /proc"
    for step in ("invoke", "compile", "pipeline"):
        done, took = _hub("exec", step, "onnxruntime", str(specials[kind]))
        _refused(done, took, words.get(kind, "a character device"))
    assert not Path(".hub/runs").exists() or not any(Path(".hub/runs").iterdir())


def test_hub_refuses_the_current_directory_and_an_empty_path(tmp_path: Path) -> None:
    for model in ("", ".", str(tmp_path)):
        done, took = _hub("exec", "compile", "tflite", model)
        _refused(done, took, "empty" if not model else "is a directory")


def test_hub_refuses_special_input_data(specials: dict[str, Path], tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read: the inputs are checked first")
    for kind in ("/dev/zero", "fifo", "socket"):
        bad = str(specials[kind])
        done, took = _hub("exec", "invoke", "onnxruntime", str(model), "--input", bad)
        _refused(done, took, "not a regular file")
    empty = tmp_path / "no-samples"
    empty.mkdir()
    done, took = _hub("exec", "invoke", "onnxruntime", str(model), "--input", str(empty))
    _refused(done, took, "holds no .npz samples")


def test_checks_name_what_the_path_is(specials: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="FIFO"):
        regular_file(specials["fifo"])
    with pytest.raises(ModelError, match="empty"):
        regular_file("")
    with pytest.raises(InputDataError, match="a directory"):
        regular_file(specials["directory"], "input data", InputDataError)
    assert regular_file(specials["directory"], directory_ok=True) == specials["directory"]
    samples = tmp_path / "samples"
    samples.mkdir()
    save_npz(samples / "a.npz", {"x": np.zeros(2)})
    os.mkfifo(samples / "b.npz")  # a FIFO among the samples would hang their reader
    with pytest.raises(InputDataError, match="FIFO"):
        input_data_path(samples)


def test_python_api_refuses_a_special_model_before_a_run(
    specials: dict[str, Path], tmp_path: Path
) -> None:
    from edgehub.core.context import HubContext
    from edgehub.toolchains.onnxruntime import ONNXRuntimeCompiledModel, ONNXRuntimeCompiler

    with HubContext(artifact_base_dir=tmp_path / "store") as ctx:
        for kind in ("fifo", "/dev/zero", "socket"):
            with pytest.raises(ModelError, match="not a regular file"):
                ONNXRuntimeCompiler().run(ctx, specials[kind])
            with pytest.raises(ModelError, match="not a regular file"):
                ONNXRuntimeCompiler().run(ctx, str(specials[kind]))
        with pytest.raises(ModelError, match="FIFO"):
            ONNXRuntimeCompiledModel.from_path(specials["fifo"])
        assert ctx.store.list_runs() == []  # refused before a run opened
        with pytest.raises(ModelError, match="is a directory"):  # the provider's own check
            ONNXRuntimeCompiler().run(ctx, specials["directory"])


@pytest.mark.parametrize("names", [("allow_pickle",), ("file", "allow_pickle"), ("fix_imports",)])
def test_inputs_named_like_numpys_parameters_are_kept(tmp_path: Path, names: tuple[str]) -> None:
    arrays = {name: np.full((2,), i, np.float32) for i, name in enumerate(names)}
    loaded = load_npz(save_npz(tmp_path / "in.npz", arrays))
    assert set(loaded) == set(names)
    for name in names:
        np.testing.assert_array_equal(loaded[name], arrays[name])


def test_ensure_room_counts_the_destinations_free_space(tmp_path: Path) -> None:
    ensure_room(1 << 20, tmp_path / "not" / "made" / "yet", "a small copy")
    with pytest.raises(StorageError, match="not enough free space"):
        ensure_room(1 << 62, tmp_path, "an impossible copy")


def test_a_staged_copy_that_does_not_fit_is_refused_before_copying(
    small_disk: Path, tmp_path: Path
) -> None:
    """The source on another file system than the stage (a real tmpfs), so it is copied."""
    big = tmp_path / "big.onnx"
    with big.open("wb") as handle:
        handle.truncate(300 << 20)  # sparse: takes no room on this disk
    with pytest.raises(StorageError, match="not enough free space"):
        link_or_copy_checked(big, small_disk / "stage" / "big.onnx")
    assert not (small_disk / "stage" / "big.onnx").exists()
    small = tmp_path / "small.onnx"
    small.write_bytes(b"x" * 1000)
    (small_disk / "stage").mkdir()
    link_or_copy_checked(small, small_disk / "stage" / "small.onnx")  # copied: another disk
    assert (small_disk / "stage" / "small.onnx").read_bytes() == small.read_bytes()
    assert (small_disk / "stage" / "small.onnx").stat().st_ino != small.stat().st_ino
