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
    for folder in os.get_exec_path():
        candidate = os.path.join(folder, "nvidia-smi")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def gpu_devices() -> dict[str, Any]:
    """What this machine shows of NVIDIA GPUs: ``nvidia-smi -L`` lines, else device nodes."""
    smi = _nvidia_smi()
    if smi:
        import subprocess

        try:
            listed = subprocess.run(
                [smi, "-L"], capture_output=True, text=True, timeout=20, check=False
            )
        except (OSError, subprocess.SubprocessError):
            listed = None
        if listed is not None and listed.returncode == 0:
            names: list[str] = [ln.strip() for ln in listed.stdout.splitlines() if ln.strip()]
            return {"visible": bool(names), "devices": names, "source": "nvidia-smi"}
    nodes = sorted(p for p in glob.glob("/dev/nvidia[0-9]*"))
    return {"visible": bool(nodes), "devices": nodes, "source": "/dev/nvidia*"}


def compute_capability() -> str | None:
    """The first GPU's compute capability as ``sm86`` (from ``nvidia-smi``); None if unknown."""
    smi = _nvidia_smi()
    if not smi:
        return None
    import subprocess

    try:
        query = [smi, "--query-gpu=compute_cap", "--format=csv,noheader"]
        listed = subprocess.run(query, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    first = listed.stdout.strip().splitlines()[:1] if listed.returncode == 0 else []
    major, _, minor = first[0].strip().partition(".") if first else ("", "", "")
    return f"sm{major}{minor}" if major.isdigit() and minor.isdigit() else None


def gpu_visible() -> bool:
    return bool(gpu_devices()["visible"])


def run(params: Params, report: Report) -> CommandOutput:
    params.finish()
    found = gpu_devices()
    report.info(f"gpu: {'visible' if found['visible'] else 'none'} ({found['source']})")
    return CommandOutput(params={}, metrics={}, data=found)
