"""The ``env`` block of every result: interpreter, packages, the runtime's own entries, machine.

Collecting it never raises: anything unreadable is reported as ``None``.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from typing import Any, Sequence

from . import AGENT_VERSION, PROTOCOL_VERSION


def dist_version(name: str) -> str | None:
    """An installed distribution's version: from its ``NAME-VERSION.dist-info`` folder's name
    on ``sys.path`` where there is one (cheap: no ``importlib.metadata``, no metadata read),
    else from its metadata."""
    wanted = name.lower().replace("-", "_").replace(".", "_")
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # the zipapp itself, a missing folder
            continue
        for item in names:
            if item.endswith(".dist-info"):
                stem, _, version = item[: -len(".dist-info")].partition("-")
                if stem.lower() == wanted and version:
                    return version
    try:
        from importlib import metadata

        return metadata.version(name)
    except Exception:
        return None


def _module_version(name: str) -> str | None:
    try:
        module = importlib.import_module(name)
    except Exception:
        return None
    version = getattr(module, "__version__", None)
    return str(version) if version is not None else None


def runtime_envs(namespaces: Sequence[str] | None) -> dict[str, Any]:
    """The runtimes' own env entries (``runtime_env()`` of each namespace; all when None)."""
    from .commands import namespaces as all_namespaces
    from .commands import runtime_package

    merged: dict[str, Any] = {}
    for namespace in all_namespaces() if namespaces is None else namespaces:
        package = runtime_package(namespace)
        describe = getattr(package, "runtime_env", None)
        if describe is None:
            continue
        try:
            merged.update(describe())
        except Exception as exc:
            merged[f"{namespace}_error"] = str(exc)
    return merged


def first_value(path: str, keys: list[str]) -> str | None:
    """The value of the first ``KEY: VALUE`` line of the file ``path`` whose key is in ``keys``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in keys and value.strip():
                    return value.strip()
    except OSError:
        return None
    return None


def cpu_model() -> str | None:
    """The CPU's model name, from /proc/cpuinfo (x86 and Arm variants) or the platform."""
    name = first_value("/proc/cpuinfo", ["model name", "Model", "Hardware", "cpu model"])
    return name or platform.processor() or None


def proc_mib(path: str, key: str) -> float | None:
    """The ``KEY: N kB`` entry ``key`` of the /proc file ``path`` in MiB (one decimal)."""
    value = first_value(path, [key])
    try:
        return round(int(value.split()[0]) / 1024.0, 1) if value else None
    except (ValueError, IndexError):
        return None


def platform_name() -> str:
    """``platform.platform()``: on Linux composed here ("Linux-6.8.0-x86_64-with-glibc2.36"),
    since that function runs ``uname -p`` for a processor name that Linux leaves out of it (the
    program prints ``unknown``, or the machine again): a process started in every cold job."""
    system, _, release, _, machine = os.uname()
    if system != "Linux":
        return platform.platform()
    libc, version = platform.libc_ver()
    words = [system, release, machine, "with", libc + version]
    name = "-".join(word.strip() for word in words if word.strip())
    for char in ' /\\:;"()':
        name = name.replace(char, "_" if char == " " else "-")
    name = name.replace("unknown", "")
    while "--" in name:
        name = name.replace("--", "-")
    return name.rstrip("-")


def agent_hash() -> str | None:
    """The source hash recorded in the zipapp at build time; ``None`` when run from source."""
    try:
        info = importlib.import_module(f"{__package__}._build_info")
    except Exception:
        return None
    value = getattr(info, "AGENT_HASH", None)
    return str(value) if value else None


def collect_env(namespaces: Sequence[str] | None = None) -> dict[str, Any]:
    """Interpreter, packages and machine, plus the runtime namespaces' entries (all when None).

    Computed once per process and namespaces (nothing in it changes while a process lives), so a
    resident server's jobs inherit what the server collected when it started."""
    key = None if namespaces is None else tuple(namespaces)
    cached = _collected.get(key)
    if cached is None:
        cached = _collected[key] = _collect(namespaces)
    return dict(cached)


_collected: dict[tuple[str, ...] | None, dict[str, Any]] = {}


def _collect(namespaces: Sequence[str] | None) -> dict[str, Any]:
    env: dict[str, Any] = {
        "agent_version": AGENT_VERSION,
        "agent_hash": agent_hash(),
        "protocol": PROTOCOL_VERSION,
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "numpy": _module_version("numpy") if "numpy" in sys.modules else dist_version("numpy"),
        "onnx": dist_version("onnx"),
    }
    env.update(runtime_envs(namespaces))
    try:
        affinity: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        affinity = None
    env.update(
        {
            "platform": platform_name(),
            "system": platform.system(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "cpu_affinity_count": affinity,
            "cpu_model": cpu_model(),
            "memory_total_mb": proc_mib("/proc/meminfo", "MemTotal"),
        }
    )
    return env
