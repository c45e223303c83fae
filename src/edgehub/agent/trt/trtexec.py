"""Running NVIDIA's ``trtexec`` (the full-TensorRT image) with an argv list, keeping its output.

The host parses what it writes (:mod:`edgehub.toolchains.tensorrt.trtexec_parse`), so local and
SSH runs share one parser; here it is only run, logged and checked for its exit status.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Sequence

from ..protocol import MissingDependencyError, RuntimeFailure, UsageError
from ..report import Report
from .gpu import gpu_visible

# Flags edgehub sets itself; an extra argument may not set them again.
RESERVED = ("--loadEngine", "--onnx", "--saveEngine", "--exportTimes", "--exportProfile",
            "--exportOutput", "--loadInputs", "--percentile")  # fmt: skip


def require_gpu_and_trtexec(command: str) -> str:
    if not gpu_visible():
        raise UsageError(
            f"{command} runs a TensorRT engine, which needs an NVIDIA GPU, and none is visible "
            "here: run it where one is (the full tensorrt image with --gpus, or the trtexec "
            "provider over SSH on a GPU device)"
        )
    found = shutil.which("trtexec")
    if found is None:
        raise MissingDependencyError(
            f"{command} needs trtexec, which is not on PATH: use the full tensorrt image "
            "(NVIDIA's container); the tensorrt-rtx image only builds engines"
        )
    return found


def check_extra_args(extra: Sequence[str] | None) -> list[str]:
    words = list(extra or [])
    for word in words:
        flag = word.split("=", 1)[0]
        if flag in RESERVED:
            raise UsageError(f"extra_args may not set {flag}: edgehub sets it itself")
        if not word.startswith("--"):
            raise UsageError(
                f"extra_args must be trtexec flags such as --useSpinWait, got {word!r}"
            )
    return words


def run_trtexec(argv: list[str], log_path: str, report: Report, timeout: float = 3600.0) -> str:
    """Run trtexec, write its combined output to ``log_path``, and return that output."""
    report.info("trtexec " + " ".join(argv[1:]))
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeFailure(f"trtexec did not finish within {timeout:.0f} s") from exc
    with open(log_path, "w", encoding="utf-8") as fh:
        fh.write(done.stdout)
    for line in done.stdout.splitlines():
        if "[E]" in line or "[W]" in line or "=== Performance summary ===" in line:
            report.info(line.strip())
    if done.returncode != 0:
        errors = [ln.strip() for ln in done.stdout.splitlines() if "[E]" in ln][-2:]
        tail = " | ".join(errors) or (done.stdout.strip().splitlines() or ["no output"])[-1]
        raise RuntimeFailure(f"trtexec exited with code {done.returncode}: {tail}")
    return done.stdout
