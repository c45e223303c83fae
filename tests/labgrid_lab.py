"""A labgrid lab on loopback for the tests: a real coordinator and a real exporter (from the
`labgrid` package), started on 127.0.0.1 and stopped after, with places made from exported
resources."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(address: str, *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "labgrid-client"), "-x", address, *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def labgrid_commands_present() -> bool:
    return shutil.which("labgrid-coordinator", path=str(BIN)) is not None


@contextmanager
def labgrid_lab(folder: Path, exports: str, places: dict[str, str]) -> Iterator[str]:
    """Coordinator + exporter of ``exports`` (YAML); ``places`` maps a place name to the
    exported resource group it matches (tag ``pool=test``). Yields the coordinator's
    HOST:PORT."""
    address = f"127.0.0.1:{free_port()}"
    log = (folder / "coordinator.log").open("wb")
    coord = subprocess.Popen(
        [str(BIN / "labgrid-coordinator"), "-l", address], cwd=folder, stdout=log, stderr=log
    )
    (folder / "exports.yaml").write_text(exports)
    exporter = None
    try:
        deadline = time.monotonic() + 30
        host, port = address.split(":")
        while socket.socket().connect_ex((host, int(port))) != 0:
            if coord.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (folder / "coordinator.log").read_text()[-400:]
                raise AssertionError(f"the labgrid coordinator did not start: {tail}")
            time.sleep(0.2)
        exporter = subprocess.Popen(
            [str(BIN / "labgrid-exporter"), "-c", address, "-n", "exp", "exports.yaml"],
            cwd=folder,
            stdout=log,
            stderr=log,
        )
        last = sorted(places.values())[-1]
        while f"exp/{last}/NetworkService" not in _client(address, "resources"):
            assert time.monotonic() < deadline, "the labgrid exporter did not register"
            time.sleep(0.3)
        for place, board in places.items():
            _client(address, "-p", place, "create")
            _client(address, "-p", place, "add-match", f"exp/{board}/*")
            _client(address, "-p", place, "set-tags", "pool=test")
        yield address
    finally:
        if exporter is not None:
            _stop(exporter)
        _stop(coord)
