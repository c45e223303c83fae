"""What a cold agent job loads before its runtime: each module here is milliseconds of every
job run as a container's own process, so they load only where they are used."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.agent.atomic import atomic_write
from edgehub.agent.bundle import build_agent_zipapp
from edgehub.agent.env import platform_name
from edgehub.agent.scratch import Scratch

# Loaded by none of the modules a TensorRT build needs, nor by its result (env included).
NOT_AT_START = (
    "dataclasses",
    "inspect",
    "logging",
    "traceback",
    "socket",
    "tempfile",
    "shutil",
    "zipfile",
    "pkgutil",
)

DRIVER = """
import io, json, sys
before = set(sys.modules)
sys.path.insert(0, sys.argv[1])
from edgehub_agent.cli import execute
from edgehub_agent.report import Report, install_log_capture
import edgehub_agent.trt.build
uninstall = install_log_capture(Report(io.StringIO()))
payload, code = execute(["trt.gpu", "--request", sys.argv[2]], Report(io.StringIO()))
uninstall()
loaded = sorted(set(sys.modules) - before)
print(json.dumps({"code": code, "env": payload["env"], "modules": loaded}))
"""


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


def test_a_trt_job_and_its_result_leave_the_heavy_modules_unloaded(
    pyz: Path, tmp_path: Path
) -> None:
    request = tmp_path / "request.json"
    request.write_text("{}")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(pyz), str(request)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["code"] == 0
    loaded = set(found["modules"])  # by the agent (not by this interpreter's start)
    assert "edgehub_agent.trt.build" in loaded
    unwanted = set(NOT_AT_START)
    if shutil.which("nvidia-smi") is None:  # trt.gpu asks nvidia-smi where there is one
        unwanted.add("subprocess")
    assert sorted(loaded & unwanted) == []
    assert found["env"]["platform"] == platform_name()


LOGGING_LATER = """
import io, json, sys
sys.path.insert(0, sys.argv[1])
from edgehub_agent.report import Report, install_log_capture
report = Report(io.StringIO())
uninstall = install_log_capture(report)
assert "logging" not in sys.modules
import logging
logging.getLogger("lib").warning("loaded later, still caught")
logging.getLogger("lib").info("below the level")
uninstall()
logging.getLogger("lib").warning("after uninstall")
hooked = any(type(f).__name__ == "_WhenLoggingLoads" for f in sys.meta_path)
print(json.dumps({"warnings": report.warnings, "hooked": hooked}))
"""


def test_library_logging_is_caught_even_when_loaded_after_the_start(pyz: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-S", "-c", LOGGING_LATER, str(pyz)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found == {"warnings": ["lib: loaded later, still caught"], "hooked": False}
    assert "after uninstall" in done.stderr  # Python's own last resort, once ours is gone


@pytest.mark.skipif(sys.platform != "linux", reason="needs Linux: composed there, else Python's")
def test_platform_name_is_what_platform_says() -> None:
    assert platform_name() == platform.platform()


def test_scratch_makes_its_private_folder_on_first_use_and_removes_it(tmp_path: Path) -> None:
    with Scratch("edgehub-test-scratch-") as scratch:
        assert scratch.folder is None
        first = scratch.file("a.onnx")
        first.write_text("x")
        assert scratch.file("b.onnx").parent == first.parent
        assert first.parent.stat().st_mode & 0o777 == 0o700
        folder = first.parent
    assert not folder.exists()


def test_atomic_write_leaves_only_the_target(tmp_path: Path) -> None:
    folder = tmp_path / "atomic"
    folder.mkdir()
    target = folder / "out.bin"
    atomic_write(target, b"one", durable=False)
    atomic_write(target, b"two", durable=False)
    assert target.read_bytes() == b"two"
    assert os.listdir(folder) == ["out.bin"]
    assert target.stat().st_mode & 0o777 == 0o644
