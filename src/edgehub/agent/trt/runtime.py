"""Finding the TensorRT module, its version and flavor, and the targets its builder accepts.

Two flavors exist: TensorRT for RTX (module ``tensorrt_rtx_bindings`` from PyPI, or
``tensorrt_rtx``), whose builder needs no GPU and targets a chosen compute capability, and full
TensorRT (module ``tensorrt``, NVIDIA's container), which builds for the GPU it runs on.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, NamedTuple

from ..protocol import MissingDependencyError, ModelError, UsageError
from .engine_file import flavor_name

RTX_MODULES = ("tensorrt_rtx_bindings", "tensorrt_rtx")
FULL_MODULE = "tensorrt"
CURRENT = "current"


class TensorRT(NamedTuple):
    module: Any
    flavor: str  # "rtx" or "full"
    version: str


def import_tensorrt() -> TensorRT:
    """The first importable TensorRT module: RTX first (the builder image), then full."""
    problems: list[str] = []
    for name in (*RTX_MODULES, FULL_MODULE):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            problems.append(f"{name}: {exc}")
            continue
        flavor = "full" if name == FULL_MODULE else "rtx"
        return TensorRT(module, flavor, str(getattr(module, "__version__", "unknown")))
    raise MissingDependencyError(
        "no TensorRT Python module can be imported here (" + "; ".join(problems) + "): run "
        "in the tensorrt-rtx image (hub images build tensorrt-rtx) or the full tensorrt image"
    )


def load_engine(runtime: Any, path: str, label: str) -> Any:
    """The engine serialized in the file ``path``, deserialized by ``runtime`` (a GPU's);
    ``label`` names it where it cannot be."""
    with open(path, "rb") as fh:
        engine = runtime.deserialize_cuda_engine(fh.read())
    if engine is None:
        raise ModelError(
            f"{label} cannot be opened by this TensorRT: build it with the same TensorRT "
            "version and flavor, for this GPU"
        )
    return engine


def tensor_mode(engine: Any, name: str) -> str:
    """``INPUT`` or ``OUTPUT``: the I/O mode of ``engine``'s tensor ``name``."""
    return str(getattr(engine.get_tensor_mode(name), "name", "")).split(".")[-1]


def describe_flavor(trt: TensorRT) -> str:
    return f"{flavor_name(trt.flavor)} {trt.version}"


def rtx_targets(module: Any) -> list[str]:
    """The compute capabilities the RTX builder can target, as ``sm86``-style names."""
    members = module.ComputeCapability.__members__
    return [name.lower() for name in members if name.startswith("SM")]


def normalize_target(word: str) -> str:
    """``SM86``, ``sm_86``, ``8.6`` and ``86`` all mean ``sm86``; ``current`` stays."""
    text = word.strip().lower().replace("_", "")
    if text == CURRENT:
        return CURRENT
    match = re.fullmatch(r"(?:sm)?(\d+)(?:\.(\d+))?", text)
    if not match:
        return text
    major, minor = match.group(1), match.group(2)
    return f"sm{major}{minor}" if minor is not None else f"sm{major}"


def resolve_targets(trt: TensorRT, raw: Any, gpu_visible: bool) -> list[str]:
    """Validated target names for ``raw`` (a string, comma-separated names, or a list)."""
    if raw is None:
        words = [CURRENT]
    elif isinstance(raw, str):
        words = [w for w in raw.split(",") if w.strip()]
    elif isinstance(raw, list) and all(isinstance(w, str) for w in raw):
        words = list(raw)
    else:
        raise UsageError(f"target must be a compute capability such as 'sm86', got {raw!r}")
    targets = [normalize_target(w) for w in words] or [CURRENT]
    if trt.flavor == "full":
        if targets != [CURRENT]:
            raise UsageError(
                f"full TensorRT builds only for the GPU it runs on (target 'current'), not "
                f"{', '.join(targets)}: build ahead of time with the tensorrt-rtx image"
            )
        return targets
    known = rtx_targets(trt.module)
    listed = ", ".join(known)
    for target in targets:
        if target == CURRENT and not gpu_visible:
            raise UsageError(
                "no GPU is visible, so there is no 'current' compute capability to build for: "
                f"choose a target the {describe_flavor(trt)} builder can target: {listed}"
            )
        if target != CURRENT and target not in known:
            raise UsageError(
                f"target {target} is not one the {describe_flavor(trt)} builder can target; "
                f"it can target: {listed} (or 'current' on a machine with a supported GPU)"
            )
    if CURRENT in targets and len(targets) > 1:
        raise UsageError("target 'current' cannot be combined with other compute capabilities")
    return targets


def set_targets(trt: TensorRT, config: Any, targets: list[str]) -> None:
    """Point an RTX builder config at ``targets`` (no-op for full TensorRT)."""
    if trt.flavor != "rtx":
        return
    capability = trt.module.ComputeCapability
    config.num_compute_capabilities = len(targets)
    for index, target in enumerate(targets):
        config.set_compute_capability(getattr(capability, target.upper()), index)
