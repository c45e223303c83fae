"""The shell line of an SSH exchange, run for real by ``sh`` with GNU tar here: the staged
files unpacked, the command run in them, the folder sent back; and the device's tar asked
whether it makes sparse archives only where the caller does not know (the SSH runner knows from
its connection's janitor, so a warm call spawns no probe)."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

import pytest

from edgehub.runners.exchange import exchange, split_script
from edgehub.runners.protocol import Exchange

pytestmark = pytest.mark.skipif(shutil.which("tar") is None, reason="needs tar on this machine")


class _Captured(Exception):
    def __init__(self, words: list[str], data: bytes) -> None:
        self.words, self.data = words, data


def _words(stage: Path, sparse: bool | None) -> tuple[list[str], bytes]:
    """The words and the tar that `exchange` hands to its transport's ``start``."""

    def start(words: list[str], data: bytes) -> object:
        raise _Captured(words, data)

    def execute(make: object, *_: object) -> tuple[int, None]:
        make()  # type: ignore[operator]
        raise AssertionError("start did not run")

    job = Exchange(stage, "unused", ["sh", "-c", "cp in.txt out/copy.txt"], "out", stage / "x")
    with pytest.raises(_Captured) as caught:
        exchange(execute, start, job, PurePosixPath("/unused/job"), sparse=sparse)
    return caught.value.words, caught.value.data


def _run_on_device(
    tmp_path: Path, stage: Path, sparse: bool | None
) -> tuple[list[str], tarfile.TarFile]:
    """Run the SSH runner's line for the exchange in ``tmp_path/device`` with a ``tar`` that
    logs its arguments; (the logged tar calls, the archive sent back)."""
    words, data = _words(stage, sparse)
    device = tmp_path / "device"
    words[4] = str(device)  # the parent folder of the staged directory, here
    unpack, command, send_back = split_script(words)
    line = unpack + " ".join(shlex.quote(word) for word in command) + "; " + send_back
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "tar.log"
    wrapper = bin_dir / "tar"
    wrapper.write_text(
        f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\nexec {shutil.which("tar")} "$@"\n'
    )
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["sh", "-c", "exec 4>&1; " + line], input=data, capture_output=True, env=env, check=True
    )
    calls = log.read_text().splitlines()
    return calls, tarfile.open(fileobj=io.BytesIO(done.stdout))


@pytest.fixture
def stage(tmp_path: Path) -> Path:
    stage = tmp_path / "stage"
    (stage / "out").mkdir(parents=True)
    (stage / "in.txt").write_text("payload")
    return stage


@pytest.mark.parametrize(
    ("sparse", "creates"), [(True, "-c --sparse -f -"), (False, "-c -f -")], ids=["sparse", "plain"]
)
def test_a_known_tar_is_not_asked_again(
    tmp_path: Path, stage: Path, sparse: bool, creates: str
) -> None:
    calls, archive = _run_on_device(tmp_path, stage, sparse)
    assert not [call for call in calls if "--version" in call]
    assert [call for call in calls if call.startswith("-c")] == [f"{creates} -- out"]
    copied = archive.extractfile("out/copy.txt")
    assert copied is not None and copied.read() == b"payload"


def test_an_unknown_tar_is_asked_once(tmp_path: Path, stage: Path) -> None:
    calls, archive = _run_on_device(tmp_path, stage, None)
    assert [call for call in calls if "--version" in call] == ["--sparse --version"]
    assert [call for call in calls if call.startswith("-c")] == ["-c --sparse -f - -- out"]
    assert "out/copy.txt" in archive.getnames()
