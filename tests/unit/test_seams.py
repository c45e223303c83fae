"""The seams between packages: capabilities are typed, private APIs stay where they are
defined, and no import cycle joins two packages."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from edgehub.runners.docker.runner import DockerCommandRunner
from edgehub.runners.local import LocalCommandRunner
from edgehub.runners.protocol import (
    SupportsAgentChannel,
    SupportsAgentRelay,
    SupportsContentUpload,
    SupportsNetworkAddress,
)
from edgehub.runners.ssh import SSHCommandRunner, SSHConfig

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "edgehub"
CHECK_CYCLES = ROOT / "scripts" / "check_cycles.py"

# what reaches around a seam, and the one module allowed to name it (None: no module here)
REACH_AROUND = {
    r"getattr\(.*runner": None,
    r"isinstance\(.*SSHCommandRunner": "runners/ssh/runner.py",
    r"_keyword_params": None,
    r"_positional_params": None,
    # option rules read from the declaration, never from annotation text or option names
    r'"None" in .*hint': None,
    r'endswith\(\("_data"': None,
    r'replace\("--set ': None,
    r"_run_exitfuncs": None,
}


def test_no_capability_found_by_reflection_or_private_api() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for pattern, owner in REACH_AROUND.items():
                if re.search(pattern, line) and where != owner:
                    found.append(f"{where}:{number}: {line.strip()}")
    assert found == []


def test_the_ssh_runner_offers_its_capabilities_by_protocol() -> None:
    runner = SSHCommandRunner(SSHConfig(host="192.0.2.1", username="edge"))  # connects lazily
    assert isinstance(runner, SupportsNetworkAddress)
    assert runner.network_address.host == "192.0.2.1"
    assert isinstance(runner, SupportsContentUpload)
    assert isinstance(runner, SupportsAgentRelay)
    assert isinstance(runner, SupportsAgentChannel)


def test_other_runners_do_not_claim_ssh_capabilities() -> None:
    local = LocalCommandRunner()
    for capability in (SupportsNetworkAddress, SupportsContentUpload, SupportsAgentRelay):
        assert not isinstance(local, capability)
    assert not isinstance(local, SupportsAgentChannel)
    # a warm container's agent socket is an agent channel; it has no content-named uploads
    assert issubclass(DockerCommandRunner, SupportsAgentChannel)
    assert not issubclass(DockerCommandRunner, SupportsContentUpload)


def _check_cycles(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK_CYCLES), str(folder)], capture_output=True, text=True
    )


def test_edgehub_has_no_import_cycle_between_packages() -> None:
    result = _check_cycles(SRC)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no import cycle" in result.stdout


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "edgehub"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_a_cycle_between_packages_fails_and_is_named(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "alpha/__init__.py": "from edgehub.beta.thing import X\n",
            "beta/__init__.py": "",
            "beta/thing.py": "from ..alpha import other\nX = 1\n",
            "alpha/other.py": "",
        },
    )
    result = _check_cycles(root)
    assert result.returncode == 1
    assert "alpha -> beta -> alpha" in result.stdout
    assert "edgehub.beta.thing:1 imports edgehub.alpha" in result.stdout


@pytest.mark.parametrize(
    "lazy",
    [
        "def load():\n    from edgehub.alpha import other\n",
        "import typing\nif typing.TYPE_CHECKING:\n    from edgehub.alpha import other\n",
    ],
    ids=["inside-a-function", "type-checking"],
)
def test_lazy_imports_make_no_cycle(tmp_path: Path, lazy: str) -> None:
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "alpha/__init__.py": "import edgehub.beta\n",
            "alpha/other.py": "",
            "beta/__init__.py": lazy,
        },
    )
    result = _check_cycles(root)
    assert result.returncode == 0, result.stdout


EXIT_PROBE = """
import atexit, sys, threading
from edgehub.cli.main import exit_now
marks = sys.argv[1]

def handler():
    with open(marks, "a") as f:
        f.write("handler\\n")

def work():
    __import__("time").sleep(0.5)
    with open(marks, "a") as f:
        f.write("thread\\n")

atexit.register(handler)
if sys.argv[2] == "thread":
    threading.Thread(target=work).start()
print("out", end="")
exit_now(7)
"""


@pytest.mark.parametrize("case", ["fast", "thread"])
def test_exit_now_runs_exit_handlers_and_keeps_the_code(tmp_path: Path, case: str) -> None:
    marks = tmp_path / "marks"
    result = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, str(marks), case],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 7, result.stderr
    assert result.stdout == "out"
    # with a thread of ours at work it is the ordinary exit, which waits for the thread
    expected = ["thread", "handler"] if case == "thread" else ["handler"]
    assert marks.read_text().splitlines() == expected


def test_stored_records_import_nothing_of_core() -> None:
    """Records are data: tracking names no core module, not even lazily or for type checking;
    a logged artifact's file moves through the context it is given (`MovesArtifacts`)."""
    from edgehub.core import HubContext
    from edgehub.tracking.run_log import MovesArtifacts

    mover: type[MovesArtifacts] = HubContext  # what to_local / to_remote are given
    found = [
        f"{path.relative_to(SRC).as_posix()}:{number}"
        for path in sorted((SRC / "tracking").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bedgehub\.core\b", line)
    ]
    assert found == []
    assert {"fetch_artifact", "push_artifact"} <= set(dir(mover))


# Code above the runtime and transport seams names neither: what a runtime can do is asked of
# its descriptor (`RuntimeDescriptor`), what a transport can do of its runner's abilities.
ABOVE_THE_SEAMS = ("ops", "acquire", "toolchains/evaluation.py")
RUNTIME_NAMES = r'"(tensorrt|tflite|onnxruntime)"'
PROVIDER_SWITCH = r"provider_type\)? *(==|!=|in )"  # also `str(device.provider_type) ==`


def _lines_matching(pattern: str) -> list[str]:
    found = []
    for top in ABOVE_THE_SEAMS:
        paths = [SRC / top] if top.endswith(".py") else sorted((SRC / top).rglob("*.py"))
        for path in paths:
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(pattern, line):
                    found.append(f"{path.relative_to(SRC).as_posix()}:{number}: {line.strip()}")
    return found


def test_no_built_in_runtime_named_above_the_runtime_seam() -> None:
    assert _lines_matching(RUNTIME_NAMES) == []


def test_no_provider_type_switch_above_the_transport_seam() -> None:
    assert _lines_matching(PROVIDER_SWITCH) == []


def test_the_seam_checks_can_fail() -> None:
    """The patterns find what they are meant to (a check that cannot fail checks nothing)."""
    assert re.search(RUNTIME_NAMES, 'if request.runtime == "tflite":')
    assert re.search(PROVIDER_SWITCH, 'if device.provider_type == "qai_hub":')
    assert re.search(PROVIDER_SWITCH, "if dev.provider_type in AB_PROVIDERS:")
    assert re.search(PROVIDER_SWITCH, 'if str(device.provider_type) == "qai_hub":')
    assert not re.search(RUNTIME_NAMES, "runtime = get_runtime(request.runtime)")


# A module's public names are those without a leading underscore. `__all__` is written only where
# a module re-exports names it imports: a package's `__init__`, the seed API under `core/` and
# `deploy/backend.py`, and a few modules that pass a name on.
def _needless_all(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            listed = ast.literal_eval(node.value)
            return not imported.intersection(listed)
    return False


def test_internal_modules_list_no_all_of_their_own_names() -> None:
    found = [
        path.relative_to(SRC).as_posix()
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "__init__.py"
        and not path.relative_to(SRC).as_posix().startswith("core/")
        and path.relative_to(SRC).as_posix() != "deploy/backend.py"
        and _needless_all(path)
    ]
    assert found == []


def test_the_all_check_can_fail(tmp_path: Path) -> None:
    own = tmp_path / "own.py"
    own.write_text('__all__ = ["f"]\n\n\ndef f() -> None: ...\n')
    passed_on = tmp_path / "passed_on.py"
    passed_on.write_text('from x import f\n\n__all__ = ["f"]\n')
    assert _needless_all(own)
    assert not _needless_all(passed_on)
