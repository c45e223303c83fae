"""The agent zipapp: hashing, caching, determinism, the CLI contract and portability rules."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import run_agent

from edgehub.agent import bundle
from edgehub.agent.bundle import agent_hash, build_agent_zipapp

AGENT_DIR = Path(bundle.__file__).resolve().parent


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


def test_same_sources_reuse_the_cached_file(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = build_agent_zipapp(cache)
    mtime = first.stat().st_mtime_ns
    second = build_agent_zipapp(cache)
    assert first == second
    assert second.stat().st_mtime_ns == mtime
    assert first.name == f"edgehub-agent-{agent_hash()[:12]}-{sys.implementation.cache_tag}.pyz"
    assert [p.name for p in cache.iterdir()] == [first.name]  # no temp files left


def test_builds_are_byte_identical(tmp_path: Path) -> None:
    a = build_agent_zipapp(tmp_path / "a")
    b = build_agent_zipapp(tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()


def test_changed_source_gives_a_new_hash_and_file(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(AGENT_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert agent_hash(copy) == agent_hash()
    (copy / "stats.py").write_text((copy / "stats.py").read_text() + "\n# changed\n")
    assert agent_hash(copy) != agent_hash()
    original = build_agent_zipapp(tmp_path / "cache")
    changed = build_agent_zipapp(tmp_path / "cache", source_dir=copy)
    assert changed != original and changed.is_file() and original.is_file()


def test_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from edgehub.paths import cache_subdir

    monkeypatch.setenv("EDGEHUB_CACHE_DIR", str(tmp_path))
    built = build_agent_zipapp(cache_subdir("agent"))
    assert built.parent == tmp_path / "agent"


def test_archive_layout(pyz: Path) -> None:
    with zipfile.ZipFile(pyz) as zf:
        names = zf.namelist()
        info = zf.read("edgehub_agent/_build_info.py").decode()
    assert "__main__.py" in names
    assert "edgehub_agent/cli.py" in names
    for module in ("ort/__init__.py", "ort/profile.py", "server/__init__.py", "server/serve.py"):
        assert f"edgehub_agent/{module}" in names
    assert "edgehub_agent/bundle.py" not in names
    assert not [n for n in names if "__pycache__" in n]
    # each module's bytecode beside it, for an interpreter of this version
    assert sorted(n for n in names if n.endswith(".pyc")) == sorted(
        n + "c" for n in names if n.endswith(".py")
    )
    assert agent_hash() in info
    assert pyz.read_bytes().startswith(b"#!/usr/bin/env python3\n")


DEMO_INIT = '''"""A runtime namespace of the tests."""

COMMANDS = ("echo",)
PRELOAD = ("json",)


def runtime_env():
    return {"demo_runtime": "1.0"}
'''
DEMO_ECHO = '''"""demo.echo: returns its one parameter."""

from ..protocol import CommandOutput


def run(params, report):
    value = params.raw_value("value")
    params.finish()
    report.info("echo")
    return CommandOutput(params=params.resolved, data={"echo": value})
'''


def test_a_runtime_namespace_is_found_by_its_subpackage(tmp_path: Path) -> None:
    """Adding agent/<ns>/ with COMMANDS and <ns>/<verb>.py adds <ns>.<verb>: no edit elsewhere."""
    copy = tmp_path / "src"
    shutil.copytree(AGENT_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "demo").mkdir()
    (copy / "demo" / "__init__.py").write_text(DEMO_INIT)
    (copy / "demo" / "echo.py").write_text(DEMO_ECHO)
    pyz = build_agent_zipapp(tmp_path / "cache", source_dir=copy)
    run = run_agent(pyz, "demo.echo", {"value": [1, 2]}, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result["data"] == {"echo": [1, 2]}
    assert run.result["env"]["demo_runtime"] == "1.0"
    assert "onnxruntime" not in run.result["env"]  # only the command's runtime reports
    usage = subprocess.run([sys.executable, str(pyz), "--help"], capture_output=True, text=True)
    assert "demo.echo" in usage.stdout and "ort.profile" in usage.stdout
    run = run_agent(pyz, "demo.nope", {}, tmp_path)
    assert run.returncode == 2 and "demo.echo" in run.message


def test_serve_refuses_an_unknown_preload_namespace(pyz: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(pyz), "serve", "--socket", str(tmp_path / "s"), "--preload", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown runtime namespace 'nope'" in proc.stderr and "ort" in proc.stderr


def test_env_command(pyz: Path, tmp_path: Path) -> None:
    run = run_agent(pyz, "env", None, tmp_path)
    assert run.returncode == 0, run.stderr
    env = run.result["env"]
    assert run.result["ok"] is True and run.result["command"] == "env"
    for key in (
        "python",
        "numpy",
        "onnxruntime",
        "onnx",
        "ort_providers",
        "platform",
        "machine",
        "cpu_count",
        "cpu_model",
    ):
        assert key in env
    assert "CPUExecutionProvider" in env["ort_providers"]
    assert env["agent_hash"] == agent_hash()
    assert run.stdout == ""


def test_the_bytecode_runs_and_a_changed_source_is_not_hidden_by_it(tmp_path: Path) -> None:
    """The agent runs from its bytecode here (no module compiled at start-up), and an archive
    whose bytecode an interpreter of another version could not read still runs its sources."""
    copy = tmp_path / "src"
    shutil.copytree(AGENT_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    pyz = build_agent_zipapp(tmp_path / "cache", source_dir=copy)
    probe = (
        "import sys, builtins; sys.path.insert(0, sys.argv[1]); seen = []; real = compile\n"
        "builtins.compile = lambda *a, **k: seen.append(a[1]) or real(*a, **k)\n"
        "import edgehub_agent.cli, edgehub_agent.protocol\n"
        "print(len([name for name in seen if str(name).endswith('.py')]))"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(pyz)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"  # bytecode read, nothing compiled
    stale = tmp_path / "stale.pyz"  # bytecode of another magic number: the sources run
    with zipfile.ZipFile(pyz) as zin, zipfile.ZipFile(stale, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            zout.writestr(item, b"\0\0\0\0" + data[4:] if item.filename.endswith(".pyc") else data)
    run = run_agent(stale, "env", None, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result["env"]["agent_hash"] == agent_hash(copy)


def test_result_on_stdout_without_result_flag(pyz: Path) -> None:
    proc = subprocess.run([sys.executable, str(pyz), "env"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["ok"] is True


def test_unknown_command_and_bad_request(pyz: Path, tmp_path: Path) -> None:
    run = run_agent(pyz, "ort.nope", {}, tmp_path)
    assert run.returncode == 2
    assert run.result["error"]["kind"] == "UsageError"
    assert "ort.inspect" in run.message
    assert run.lines[-1] == f"error: {run.message}"

    run = run_agent(pyz, "ort.inspect", {"model": "m.onnx", "modle": 1}, tmp_path)
    assert run.returncode == 2 and "unknown parameter(s) modle" in run.message

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = tmp_path / "bad.result.json"
    proc = subprocess.run(
        [sys.executable, str(pyz), "ort.inspect", "--request", str(bad), "--result", str(result)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "not valid JSON" in json.loads(result.read_text())["error"]["message"]


def _agent_sources() -> list[Path]:
    return [p for p in bundle.agent_sources() if p.name != "bundle.py"]


def test_sources_parse_as_python_3_8() -> None:
    for path in _agent_sources():
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))


# calls that parse on 3.8 but fail there when they run
_NEWER_CALLS = {"removeprefix": "3.9", "removesuffix": "3.9", "bit_count": "3.10"}


def test_sources_call_nothing_newer_than_python_3_8() -> None:
    found = []
    for path in _agent_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "zip" and node.keywords:
                found.append(f"{path.name}:{node.lineno} zip(strict=) needs 3.10")
            if isinstance(func, ast.Attribute) and func.attr in _NEWER_CALLS:
                needs = _NEWER_CALLS[func.attr]
                found.append(f"{path.name}:{node.lineno} .{func.attr}() needs {needs}")
    assert not found, found


def test_agent_imports_only_stdlib_numpy_onnx_onnxruntime() -> None:
    allowed = {"numpy", "onnx", "onnxruntime", "onnxconverter_common"}  # + trt: tensorrt image
    stdlib = set(sys.stdlib_module_names)
    for path in _agent_sources():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in stdlib or root in allowed or root == "__future__", (path, root)


def test_host_modules_stay_light() -> None:
    code = (
        "import sys; import edgehub.agent.bundle, edgehub.agent.protocol; "
        "print(sorted(m for m in ('numpy', 'onnx', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
