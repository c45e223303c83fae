"""The runtimes `hub exec` knows, and their components."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgehub.core.component.base import Component
from edgehub.core.component.outputs import CompiledModel
from edgehub.errors import UsageError

__all__ = ["Runtime", "get_runtime", "runtime_names"]


@dataclass(frozen=True)
class Runtime:
    name: str
    compiler: type[Component]
    profiler: type[Component]
    invoker: type[Component]
    compiled_model: type[CompiledModel]
    available: bool
    issue: str = ""
    inspect: Callable[..., dict[str, Any]] | None = None


def _runtimes() -> dict[str, Runtime]:
    from edgehub.core import compile as c
    from edgehub.core import invoke as i
    from edgehub.core import profile as p

    return {
        "onnxruntime": Runtime(
            "onnxruntime",
            c.ONNXRuntimeCompiler,
            p.ONNXRuntimeProfiler,
            i.ONNXRuntimeInvoker,
            c.ONNXRuntimeCompiledModel,
            available=True,
            inspect=_ort_inspect,
        ),
        "tflite": Runtime(
            "tflite",
            c.TFLiteCompiler,
            p.TFLiteProfiler,
            i.TFLiteInvoker,
            c.TFLiteCompiledModel,
            available=False,
            issue="the TFLite / LiteRT toolchain",
        ),
        "tensorrt": Runtime(
            "tensorrt",
            c.TensorRTCompiler,
            p.TensorRTProfiler,
            i.TensorRTInvoker,
            c.TensorRTCompiledModel,
            available=True,  # TEMPORARY (branch tensorrt): the registry descriptor decides
            inspect=_trt_inspect,
        ),
    }


def _ort_inspect(ctx: Any, model: Any, device: str | None) -> dict[str, Any]:
    from edgehub.toolchains.onnxruntime.local import inspect_model

    return inspect_model(ctx, model, device)


def _trt_inspect(ctx: Any, model: Any, device: str | None) -> dict[str, Any]:
    from edgehub.toolchains.tensorrt.local import inspect_model

    return inspect_model(ctx, model, device)


def runtime_names() -> list[str]:
    return ["onnxruntime", "tflite", "tensorrt"]


def get_runtime(name: str) -> Runtime:
    """The runtime called ``name``; a clear error for unknown or not-yet-available ones."""
    runtimes = _runtimes()
    runtime = runtimes.get(name)
    if runtime is None:
        close = difflib.get_close_matches(name, runtimes, n=1, cutoff=0.4)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown runtime {name!r}{hint} (known: {', '.join(runtimes)})")
    if not runtime.available:
        available = ", ".join(r.name for r in runtimes.values() if r.available)
        raise UsageError(
            f"runtime {name!r} is not available yet ({runtime.issue} is still being built); "
            f"available now: {available}"
        )
    return runtime
