"""The runtime registry: descriptors from entry points, and the core names served through it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from edgehub.core import runtimes
from edgehub.core.device import EmbedlONNXRuntimeConfig, TrtexecConfig
from edgehub.core.runtimes import RuntimeDescriptor, get_runtime, runtime_names
from edgehub.errors import UsageError
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.remote.config import SSHAgentConfig

SRC = Path(__file__).resolve().parents[2] / "src" / "edgehub"


@pytest.fixture
def fresh_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # a cache of its own: the tests replace the scan of the installed distributions
    monkeypatch.delenv("EDGEHUB_CACHE_DIR", raising=False)  # which would win over XDG
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    runtimes.reset_runtimes()
    yield
    runtimes.reset_runtimes()


def test_builtin_runtimes_and_their_descriptors() -> None:
    assert runtime_names()[:3] == ["onnxruntime", "tflite", "tensorrt"]
    ort = get_runtime("onnxruntime")
    assert isinstance(ort, RuntimeDescriptor)
    assert ort.compiler.__name__ == "ONNXRuntimeCompiler"
    assert ort.compiled_model.__name__ == "ONNXRuntimeCompiledModel"
    assert (ort.image, ort.agent_namespace) == ("onnxruntime", "ort")
    assert ort.provider_configs == (EmbedlONNXRuntimeConfig, SSHAgentConfig, QAIHubConfig)
    from edgehub.toolchains.onnxruntime.local import inspect_model

    assert ort.inspect is inspect_model
    trt = runtimes.all_runtimes()["tensorrt"]
    assert trt.provider_configs == (TrtexecConfig,) and trt.available
    assert (trt.image, trt.agent_namespace) == ("tensorrt-rtx", "trt")


# a runtime that declares itself unavailable (a plug-in whose toolchain is still being built)
PENDING = RuntimeDescriptor(
    name="pending",
    compiler=get_runtime("onnxruntime").compiler,
    profiler=get_runtime("onnxruntime").profiler,
    invoker=get_runtime("onnxruntime").invoker,
    compiled_model=get_runtime("onnxruntime").compiled_model,
    available=False,
    issue="the pending toolchain",
)


def test_unknown_and_unavailable_runtime_messages(
    fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pending = EntryPoint("pending", f"{__name__}:PENDING", runtimes.ENTRY_POINT_GROUP)
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [pending])
    with pytest.raises(UsageError, match=r"unknown runtime 'onnxrutime'; did you mean 'onnx"):
        get_runtime("onnxrutime")
    with pytest.raises(UsageError) as info:
        get_runtime("pending")
    assert str(info.value) == (
        "runtime 'pending' is not available yet (the pending toolchain is still being "
        "built); available now: onnxruntime, tflite, tensorrt"
    )


def test_broken_entry_points_are_one_line_warnings(
    fresh_registry: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = [
        EntryPoint("gone", "no_such_module_xyz:RUNTIME", runtimes.ENTRY_POINT_GROUP),
        EntryPoint("notone", "edgehub.errors:UsageError", runtimes.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: broken)
    names = runtime_names()
    assert names == ["onnxruntime", "tflite", "tensorrt"]  # the built-ins still load
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith("edgehub: warning: runtime entry point gone = ")
    assert "ModuleNotFoundError" in err[0] and err[0].endswith("; skipping it")
    assert "is a type, not a RuntimeDescriptor" in err[1]
    assert len(runtimes.runtime_problems()) == 2


def test_core_names_resolve_through_the_registry() -> None:
    from edgehub.core import compile, invoke, profile

    assert compile.ONNXRuntimeCompiler is get_runtime("onnxruntime").compiler
    assert "local" in compile.ONNXRuntimeCompiler.providers()  # providers registered
    assert profile.TensorRTProfilingMethod is profile.ProfilingMethod
    assert profile.ONNXRuntimeProfilingResult.__name__ == "ONNXRuntimeProfilingResult"
    assert invoke.TFLiteInvoker.__name__ == "TFLiteInvoker"
    assert {"CompileError", "TFLiteCompiledModel", "TensorRTCompiler"} <= set(dir(compile))
    with pytest.raises(AttributeError, match="has no attribute 'Path'"):
        compile.Path  # noqa: B018  (a module attribute of the components, not an export)


def test_core_imports_no_toolchain_statement() -> None:
    """No ``import edgehub.toolchains...`` anywhere under core, not even inside functions."""
    offenders = []
    for path in (SRC / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("edgehub.toolchains")]
    assert offenders == []


def _modules_after(code: str) -> list[str]:
    probe = (
        f"{code}\nimport sys, json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith("
        "('edgehub.toolchains', 'onnx', 'docker', 'paramiko', 'importlib.metadata')))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


def test_importing_core_and_building_the_cli_loads_no_runtime() -> None:
    assert _modules_after("import edgehub.core.compile, edgehub.core.profile") == []
    assert _modules_after("from edgehub.cli.main import build_parser; build_parser()") == []


def test_one_runtime_loads_alone_and_the_scan_is_remembered(tmp_path: Path) -> None:
    """`get_runtime` imports only the runtime asked for; a second process reads the entry
    points from the cache (no importlib.metadata), and a package installed on sys.path (an
    entry whose mtime changes) makes it scan again."""
    site = tmp_path / "site"
    site.mkdir()
    code = (
        f"import sys; sys.path.append({str(site)!r})\n"
        "from edgehub.core.runtimes import get_runtime; get_runtime('onnxruntime')"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("EDGEHUB_CACHE_DIR", None)  # which would win over XDG

    def loaded() -> list[str]:
        probe = (
            f"{code}\nimport sys, json\n"
            "print(json.dumps(sorted(m for m in sys.modules if m in ('importlib.metadata', "
            "'edgehub.toolchains.onnxruntime', 'edgehub.toolchains.tensorrt'))))"
        )
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
        )
        return list(json.loads(out.stdout))

    scanned = ["edgehub.toolchains.onnxruntime", "importlib.metadata"]
    assert loaded() == scanned
    assert (tmp_path / "cache" / "edgehub" / "entry-points.json").is_file()
    assert loaded() == ["edgehub.toolchains.onnxruntime"]
    (site / "new_package-1.0.dist-info").mkdir()
    stamp = site.stat().st_mtime + 5
    os.utime(site, (stamp, stamp))
    assert loaded() == scanned
