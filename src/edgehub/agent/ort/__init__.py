"""ONNX Runtime commands (``ort.VERB``, the module ``ort/VERB.py``). Importing this package
imports nothing heavy; :data:`PRELOAD` is what a resident server of an ONNX Runtime image
imports up front."""

from __future__ import annotations

from typing import Any

COMMANDS = ("inspect", "compile", "profile", "invoke", "batch", "ab")
PRELOAD = ("numpy", "onnxruntime", "onnx")


def runtime_env() -> dict[str, Any]:
    """This runtime's part of a result's ``env`` block: version, execution providers, device."""
    try:
        import onnxruntime as ort
    except Exception as exc:
        return {"onnxruntime": None, "ort_providers": [], "ort_error": str(exc)}
    providers: list[str] = []
    device: str | None = None
    try:
        providers = list(ort.get_available_providers())
        device = str(ort.get_device())
    except Exception:
        pass
    return {"onnxruntime": str(ort.__version__), "ort_providers": providers, "ort_device": device}
