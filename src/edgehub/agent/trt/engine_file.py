"""Which files are TensorRT engines, and which TensorRT can load them: the rules the host (before
staging a file) and the agent (before TensorRT or trtexec loads it) both apply. Standard library
only."""

from __future__ import annotations

from collections.abc import Mapping

ENGINE_SUFFIXES = (".engine", ".plan", ".trt")


def engine_problem(name: str) -> str | None:
    """Why the file ``name`` is not a TensorRT engine to run, in one line; None when it is."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    suffix = "." + base.rsplit(".", 1)[-1].lower() if "." in base else ""
    if suffix == ".onnx":
        return (
            f"{base} is an ONNX model, not a TensorRT engine: compile it with TensorRTCompiler "
            "first (hub exec compile tensorrt ...)"
        )
    if suffix not in ENGINE_SUFFIXES:
        return (
            f"{base} is not a TensorRT engine ({', '.join(ENGINE_SUFFIXES)}); compile the ONNX "
            "model with TensorRTCompiler first (hub exec compile tensorrt ...)"
        )
    return None


def engine_record(flavor: str, version: str, targets: list[str]) -> dict[str, object]:
    """What an engine records of the TensorRT that built it (its sidecar ``engine_info``)."""
    return {"tensorrt_flavor": flavor, "tensorrt_version": version, "targets": list(targets)}


def flavor_name(flavor: object) -> str:
    return "TensorRT for RTX" if flavor == "rtx" else "TensorRT"


def _targets(recorded: object) -> list[str]:
    if isinstance(recorded, str):
        return [t.strip() for t in recorded.split(",") if t.strip()]
    if isinstance(recorded, (list, tuple)):
        return [str(t) for t in recorded]
    return []


def engine_mismatch(
    record: Mapping[str, object], flavor: str, version: str, capability: str | None = None
) -> str | None:
    """What differs, in one line, between the TensorRT an engine was built with (``record``,
    see `engine_record`) and the one about to load it (``flavor``, ``version``, the GPU's compute
    capability where known); None when nothing does (``current`` targets are not checked)."""
    built_flavor, built_version = record.get("tensorrt_flavor"), record.get("tensorrt_version")
    targets = _targets(record.get("targets"))
    differs: list[str] = []
    if built_flavor and built_flavor != flavor:
        differs.append(f"flavor {flavor_name(built_flavor)} vs {flavor_name(flavor)} here")
    elif built_version and str(built_version) != version:
        differs.append(f"version {built_version} vs {version} here")
    if capability and targets and "current" not in targets and capability not in targets:
        differs.append(f"GPU {', '.join(targets)} vs {capability} here")
    if not differs:
        return None
    built = f"{flavor_name(built_flavor)} {built_version or '?'} for {', '.join(targets) or '?'}"
    return (
        f"the engine was built with {built} and cannot load here ({'; '.join(differs)}): "
        "compile the ONNX model again for this runtime and GPU (hub exec compile tensorrt ...)"
    )
