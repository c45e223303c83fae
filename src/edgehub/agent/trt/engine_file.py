"""Which files are TensorRT engines: the one rule the host (before staging a file) and the agent
(before trtexec loads it) both apply. Standard library only."""

from __future__ import annotations

ENGINE_SUFFIXES = (".engine", ".plan", ".trt")

__all__ = ["ENGINE_SUFFIXES", "engine_problem"]


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
