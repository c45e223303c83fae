"""onnxsim as onnx2tf runs it, without the fusions that write ops onnx2tf cannot convert.

onnx2tf runs the ``onnxsim`` command on its input (several times). onnxsim's default passes
fuse subgraphs into single ops, some of which onnx2tf has no converter for (``com.microsoft``
Attention: "No module named 'onnx2tf.ops.Attention'"); skipping onnxsim (``-nuo``) loses the
folding the layout logic relies on. So the onnx2tf child finds first on its ``PATH`` an
``onnxsim`` that runs the real one with those passes skipped (`write_shim`), then rewrites its
output (`rewrite_simplified`): some patterns only appear once onnxsim has folded them.
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


# onnxsim's own script run in this interpreter (another program: as a process), its output
# then rewritten; a failed rewrite leaves onnxsim's output as it is
_PYTHON_SHIM = """#!{python}
import runpy, subprocess, sys
sys.path.insert(0, {root!r})
args = sys.argv[1:]
with open({real!r}, "rb") as script:
    in_python = b"python" in script.readline()
if in_python:
    sys.argv = [{real!r}, *args, *{extra!r}]
    try:
        runpy.run_path({real!r}, run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code
else:
    code = subprocess.call([{real!r}, *args, *{extra!r}])
if code in (0, None) and len(args) >= 2:
    try:
        from importlib import import_module
        from pathlib import Path
        import_module({module!r}).rewrite_simplified(Path(args[1]))
    except Exception as error:
        print(f"onnxsim shim: output not rewritten: {{error}}", file=sys.stderr)
sys.exit(code)
"""


def agent_root() -> Path:
    """The folder (or zip archive) holding this agent's top-level package."""
    return Path(__file__).resolve().parents[__name__.count(".")]


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
    extra = ["--skip-optimization", *passes] if passes else []
    if rewrite:
        # onnxsim runs in the shim's own interpreter (one start, one onnx import), then the
        # rewrite; this package is found where it is (a source tree or the agent's zipapp)
        text = _PYTHON_SHIM.format(
            python=sys.executable, root=str(agent_root()), real=real, extra=extra, module=__name__
        )
    else:
        words = " ".join(shlex.quote(word) for word in extra)
        text = f'#!/bin/sh\nexec {shlex.quote(real)} "$@" {words}\n'
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
