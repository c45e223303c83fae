"""``trt.gpu``: is an NVIDIA GPU visible where the agent runs? (device nodes, then nvidia-smi)

Request: ``{}``. Data: ``{visible, devices: [names], source}``. Pure standard library.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from ..protocol import CommandOutput, Params
from ..report import Report


def _nvidia_smi() -> str | None:
    """The ``nvidia-smi`` on PATH (what ``shutil.which`` finds, without importing ``shutil``:
    milliseconds of every cold build's start), or None."""
    candidates = (os.path.join(folder, "nvidia-smi") for folder in os.get_exec_path())
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def _smi_lines(*args: str) -> list[str] | None:
    """The non-empty lines ``nvidia-smi ARGS`` prints; None where it is missing or fails."""
    smi = _nvidia_smi()
    if not smi:
        return None
    import subprocess

    try:
        done = subprocess.run([smi, *args], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return (
        [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
        if not done.returncode
        else None
    )


def gpu_devices() -> dict[str, Any]:
    """What this machine shows of NVIDIA GPUs: ``nvidia-smi -L`` lines, else device nodes."""
    names = _smi_lines("-L")
    if names is not None:
        return {"visible": bool(names), "devices": names, "source": "nvidia-smi"}
    nodes = sorted(p for p in glob.glob("/dev/nvidia[0-9]*"))
    return {"visible": bool(nodes), "devices": nodes, "source": "/dev/nvidia*"}


def compute_capability() -> str | None:
    """The first GPU's compute capability as ``sm86`` (from ``nvidia-smi``); None if unknown."""
    first = (_smi_lines("--query-gpu=compute_cap", "--format=csv,noheader") or [""])[0]
    major, _, minor = first.partition(".")
    return f"sm{major}{minor}" if major.isdigit() and minor.isdigit() else None


def gpu_visible() -> bool:
    return bool(gpu_devices()["visible"])


def run(params: Params, report: Report) -> CommandOutput:
    params.finish()
    found = gpu_devices()
    report.info(f"gpu: {'visible' if found['visible'] else 'none'} ({found['source']})")
    return CommandOutput(params={}, metrics={}, data=found)
