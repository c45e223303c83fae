"""onnxsim as onnx2tf runs it, without the fusions that write ops onnx2tf cannot convert.

onnx2tf simplifies its input by running the ``onnxsim`` command (three times, and again after
its shape corrections). onnxsim's default passes fuse subgraphs into single ops; some of those
ops have no onnx2tf converter (an attention block becomes ``com.microsoft`` Attention, and the
conversion fails with "No module named 'onnx2tf.ops.Attention'"). Skipping onnxsim altogether
(``-nuo``) loses the constant folding and shape resolution the layout logic relies on, so
instead the onnx2tf child finds, first on its ``PATH``, an ``onnxsim`` that runs the real one
with those fusion passes skipped (`write_shim`), and then rewrites what it wrote
(`rewrite_simplified`): some patterns onnx2tf mis-converts only appear once onnxsim has folded
them into constants.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
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


def write_shim(folder: Path, passes: list[str], env: dict[str, str], rewrite: bool = False) -> bool:
    """Write ``folder/onnxsim`` running the ``onnxsim`` found on ``env``'s PATH with
    ``passes`` skipped (and, with ``rewrite``, `rewrite_simplified` on its output), and put
    ``folder`` first on ``env``'s PATH; False (``env`` unchanged) where there is nothing to
    skip or rewrite, or no onnxsim to wrap."""
    real = shutil.which("onnxsim", path=env.get("PATH"))
    if not (passes or rewrite) or real is None:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "onnxsim"
    skipped = " ".join(shlex.quote(p) for p in passes)
    run = f'{shlex.quote(real)} "$@"' + (f" --skip-optimization {skipped}" if passes else "")
    if rewrite:
        # this module, run from where its package is found (a source tree or the agent's
        # zipapp); a failed rewrite leaves onnxsim's output as it is
        root = Path(__file__).resolve().parents[__name__.count(".")]
        after = (
            f"PYTHONPATH={shlex.quote(str(root))} {shlex.quote(sys.executable)} -m "
            f'{__name__} "$2" || true'
        )
        text = f"#!/bin/sh\n{run} || exit $?\n{after}\n"
    else:
        text = f"#!/bin/sh\nexec {run}\n"
    shim.write_text(text, encoding="utf-8")
    shim.chmod(0o755)
    env["PATH"] = os.pathsep.join([str(folder), env.get("PATH", "")])
    return True


def rewrite_simplified(path: Path) -> list[str]:
    """Apply to the model onnxsim wrote at ``path`` the rewrites that need its folded
    constants (`.graph_rewrites.constants_below_rank3`); returns the nodes changed."""
    import onnx

    from ..atomic import replacing
    from .graph_rewrites import constants_below_rank3

    model = onnx.load(str(path))
    changed = constants_below_rank3(model)
    if changed:
        with replacing(path, durable=False) as temporary:  # never a part of a model
            onnx.save(model, temporary)
    return changed


if __name__ == "__main__":
    for name in rewrite_simplified(Path(sys.argv[1])):
        print(f"{name}: a constant of rank >= 3 given without its leading 1s")
