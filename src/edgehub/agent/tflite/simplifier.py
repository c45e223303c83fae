"""onnxsim as onnx2tf runs it, without the fusions that write ops onnx2tf cannot convert.

onnx2tf simplifies its input by running the ``onnxsim`` command (three times, and again after
its shape corrections). onnxsim's default passes fuse subgraphs into single ops; some of those
ops have no onnx2tf converter (an attention block becomes ``com.microsoft`` Attention, and the
conversion fails with "No module named 'onnx2tf.ops.Attention'"). Skipping onnxsim altogether
(``-nuo``) loses the constant folding and shape resolution the layout logic relies on, so
instead the onnx2tf child finds, first on its ``PATH``, an ``onnxsim`` that runs the real one
with those fusion passes skipped (`write_shim`).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
from pathlib import Path

# onnxsim's fusion passes and the op each writes
FUSIONS = {
    "fuse_attention": "Attention",
    "fuse_gqa": "GroupQueryAttention",
    "fuse_rms_norm": "RMSNormalization",
    "fuse_rope": "RotaryEmbedding",
}


def onnx2tf_ops() -> set[str] | None:
    """The ONNX ops onnx2tf has a converter module for (None where that cannot be told)."""
    spec = importlib.util.find_spec("onnx2tf")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        return None
    ops_dir = os.path.join(locations[0], "ops")
    if not os.path.isdir(ops_dir):
        return None
    return {name[:-3] for name in os.listdir(ops_dir) if name.endswith(".py")}


def passes_to_skip(available: set[str] | None) -> list[str]:
    """The fusion passes (`FUSIONS`) whose op is not among ``available``."""
    if available is None:
        return []
    return [name for name, op in FUSIONS.items() if op not in available]


def write_shim(folder: Path, passes: list[str], env: dict[str, str]) -> bool:
    """Write ``folder/onnxsim`` running the ``onnxsim`` found on ``env``'s PATH with
    ``passes`` skipped, and put ``folder`` first on ``env``'s PATH; False (``env`` unchanged)
    where there is nothing to skip or no onnxsim to wrap."""
    real = shutil.which("onnxsim", path=env.get("PATH"))
    if not passes or real is None:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "onnxsim"
    skipped = " ".join(shlex.quote(p) for p in passes)
    shim.write_text(
        f'#!/bin/sh\nexec {shlex.quote(real)} "$@" --skip-optimization {skipped}\n',
        encoding="utf-8",
    )
    shim.chmod(0o755)
    env["PATH"] = os.pathsep.join([str(folder), env.get("PATH", "")])
    return True
