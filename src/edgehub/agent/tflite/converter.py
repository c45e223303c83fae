"""Running onnx2tf: its command line per precision, offline, with its failure in one line.

onnx2tf runs as a child process (``python -m onnx2tf``) in a scratch directory, so TensorFlow's
memory goes away with it and a cancelled compile kills it. Before it runs, the scratch directory
receives the calibration sample file onnx2tf would otherwise download for image-like inputs
(:data:`SAMPLE_FILE`), and for integer precisions the calibration arrays (one ``.npy`` per input
in the TFLite layout, passed with ``-cind NAME FILE 0 1``: used as they are). It writes
``<stem>_<suffix>.tflite`` (`output_file`).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..protocol import ModelError, RuntimeFailure
from ..report import Report
from . import simplifier

PRECISIONS = ("float32", "float16", "dynamic_int8", "int8", "int16x8")
INTEGER_PRECISIONS = ("int8", "int16x8")
SAMPLE_FILE = "calibration_image_sample_data_20x128x128x3_float32.npy"
# the file onnx2tf writes per precision (``full_`` before it with quantize_io, int8 and int16x8)
_SUFFIX = {
    "float32": "float32",
    "float16": "float16",
    "dynamic_int8": "dynamic_range_quant",
    "int8": "integer_quant",
    "int16x8": "integer_quant_with_int16_act",
}
# ONNX's recurrent ops: onnx2tf lowers each to a WHILE loop unless told to unroll it
RECURRENT_OPS = ("LSTM", "GRU", "RNN")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit)\w*)(?::\s*(.*))?$")
# TensorFlow's own chatter that is not worth a progress line.
_NOISE = re.compile(
    r"^(I0000|W0000|WARNING: All log messages|\s*\d+: TensorSpec|\s*inputs_\d+ \(|Captures:|"
    r"Output Type:|\s*TensorSpec\(|\* Endpoint|Saved artifact at|fully_quantize:)"
)


def output_file(folder: Path, stem: str, precision: str, quantize_io: bool) -> Path:
    suffix = _SUFFIX[precision]
    if quantize_io and precision in INTEGER_PRECISIONS:
        suffix = "full_" + suffix
    return folder / f"{stem}_{suffix}.tflite"


def write_sample_file(folder: Path) -> None:
    """The 20x128x128x3 float32 sample onnx2tf downloads for image inputs (its own check runs)."""
    rng = np.random.default_rng(0)
    np.save(str(folder / SAMPLE_FILE), rng.random((20, 128, 128, 3), dtype=np.float32))


def recurrent_nodes(model: Any) -> list[str]:
    """The names of ``model``'s recurrent nodes (`RECURRENT_OPS`; unnamed ones as
    ``<op>_<index>``, the way onnxruntime lists them)."""
    return [
        node.name or f"{node.op_type}_{index}"
        for index, node in enumerate(model.graph.node)
        if node.op_type in RECURRENT_OPS and node.domain in ("", "ai.onnx")
    ]


def command(
    model: Path,
    out_dir: Path,
    precision: str,
    quantize_io: bool,
    calibration: dict[str, Path],
    per_channel: bool,
    unroll: bool = False,
) -> list[str]:
    """The onnx2tf argv for one precision; with ``unroll``, recurrent ops are unrolled over
    their time steps (``-eru``) instead of lowered to WHILE loops."""
    argv = [sys.executable, "-m", "onnx2tf", "-i", str(model), "-o", str(out_dir)]
    argv += ["-v", "error"]
    if unroll:
        argv.append("-eru")
    if precision == "dynamic_int8":
        argv.append("-odrqt")
    if precision in INTEGER_PRECISIONS:
        argv += ["-oiqt", "-qt", "per-channel" if per_channel else "per-tensor"]
        for name, path in calibration.items():
            argv += ["-cind", name, str(path), "0", "1"]
        if quantize_io:
            argv += ["-iqd", "int8", "-oqd", "int8"]
    return argv


def failure_reason(lines: Sequence[str]) -> str:
    """The converter's reason from its output: the exception line (plus the sentence after a
    Keras "Exception encountered" header) and the ONNX node it names."""
    reason = ""
    node = ""
    for i, line in enumerate(lines):
        text = line.strip()
        if text.startswith("ERROR: onnx_op_name:"):
            node = text.split(":", 2)[2].strip()
        match = _EXCEPTION.match(text)
        if match and not reason:
            reason = text
            if "Exception encountered" in text:
                following = [s.strip() for s in lines[i + 1 : i + 4] if s.strip()]
                if following:
                    reason = f"{match.group(1)}: {following[0]}"
    if not reason:
        errors = [
            s.strip()[len("ERROR:") :].strip() for s in lines if s.strip().startswith("ERROR:")
        ]
        meaningful = [s.strip() for s in lines if s.strip() and not _NOISE.match(s.strip())]
        reason = errors[0] if errors else (meaningful[-1] if meaningful else "")
    if len(reason) > 400:
        reason = reason[:397] + "..."
    return f"{reason} (ONNX node '{node}')" if node else reason


def run_onnx2tf(
    argv: list[str],
    cwd: Path,
    report: Report,
    tool: str = "onnx2tf",
    env: dict[str, str] | None = None,
) -> float:
    """Run onnx2tf (or another converter child, ``tool``, in ``env``) streaming its meaningful
    lines; its wall time in seconds. A failure is a ModelError carrying the converter's reason;
    the child and its processes are killed if this agent is stopped."""
    env = dict(os.environ if env is None else env)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    tail: deque[str] = deque(maxlen=400)
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=str(cwd),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = _ANSI.sub("", raw.rstrip())
            if not line.strip():
                tail.append("")
                continue
            tail.append(line)
            if not _NOISE.match(line) and not line.startswith(("  File ", "    ")):
                report.info(f"{tool}: {line}")
        code = proc.wait()
    except BaseException:
        _kill(proc)
        raise
    elapsed = time.perf_counter() - started
    if code != 0:
        reason = failure_reason(list(tail))
        if code < 0 and not _EXCEPTION.match(reason.split(" (ONNX node")[0]):
            reason = _silent_exit(code)  # a crash: its last line is no reason
        raise ConversionFailure(tool, reason or _silent_exit(code))
    return elapsed


def _silent_exit(code: int) -> str:
    """Why a converter that printed no error stopped, from its exit status."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if name == "SIGKILL":
            return (
                "it was killed (SIGKILL) without an error message, most likely out of memory: "
                "give it more (the device's docker memory in hub.toml)"
            )
        return (
            f"it crashed ({name}) without an error message (TensorFlow's converter): try "
            "another precision (float16 or dynamic_int8 need no calibration run)"
        )
    return f"it exited with status {code} without an error message"


class ConversionFailure(ModelError):
    """The converter failed: its ``reason``, and in the message what to try (`remedy`)."""

    def __init__(self, tool: str, reason: str, tried: str = "") -> None:
        super().__init__(f"{tool} cannot convert the model: {reason}{tried}{remedy(reason, tool)}")
        self.tool = tool
        self.reason = reason

    @property
    def kind(self) -> str:
        return "ModelError"  # the host knows the protocol's kinds, not this detail


def convert(
    argv: list[str],
    cwd: Path,
    source: Path,
    out_dir: Path,
    model_ops: set[str],
    report: Report,
    layout_free: Sequence[str] = (),
) -> tuple[float, dict[str, Any]]:
    """Run onnx2tf (``argv``: `command`) on a fresh copy of the folder ``source`` (onnx2tf
    overwrites its input), and where it fails, again with each remedy that fits, in this order,
    each kept for the next try:

    - a converter missing for an op the model (``model_ops``) lacks: onnxsim, which onnx2tf
      runs first, wrote it, so the retry skips onnxsim (``-nuo``);
    - inputs of rank 3-5 that feed no channel-wise op (``layout_free``: RNN states, sequences)
      keep their ONNX layout (``-kat``; their calibration files rewritten so, in place);
    - the parameter replacement onnx2tf generated for the failure (``*_auto.json`` in
      ``out_dir``), passed back with ``-prf``.

    onnx2tf's onnxsim runs without the fusions onnx2tf cannot convert and with the rewrites
    that need its folded constants (`simplifier`; the passes skipped are recorded as
    ``onnxsim_skipped_passes``). Returns the seconds spent and what was applied (any of
    ``onnxsim: False``, ``kept_input_layouts``, ``auto_param_replacement``, plus the passes
    skipped); a failure that outlives its remedies names them all."""
    given = Path(argv[argv.index("-i") + 1])
    env = dict(os.environ)
    skipped = simplifier.passes_to_skip(simplifier.onnx2tf_ops())
    if not simplifier.write_shim(cwd / "onnxsim-shim", skipped, env, rewrite=True):
        skipped = []
    recorded: dict[str, Any] = {"onnxsim_skipped_passes": skipped} if skipped else {}

    def fresh_copy() -> None:
        shutil.rmtree(given.parent, ignore_errors=True)
        shutil.copytree(source, given.parent)

    fresh_copy()
    try:
        return run_onnx2tf(argv, cwd, report, env=env), recorded
    except ConversionFailure as exc:
        first = failure = exc
    tried: list[str] = []
    while (retry := _remedy_for(failure, argv, cwd, out_dir, model_ops, layout_free)) is not None:
        argv, applied, what = retry
        recorded.update(applied)
        tried.append(what)
        report.warn(f"onnx2tf failed; trying again with {what}")
        started = time.perf_counter()
        fresh_copy()
        try:
            run_onnx2tf(argv, cwd, report, env=env)
        except ConversionFailure as again:
            failure = again
            continue
        report.info(f"converted with {' and '.join(tried)}")
        return time.perf_counter() - started, recorded
    if not tried:
        raise first
    words = f"; tried again with {', then '.join(tried)}, which failed too: {failure.reason}"
    raise ConversionFailure(first.tool, first.reason, words) from None


def _remedy_for(
    failure: ConversionFailure,
    argv: list[str],
    cwd: Path,
    out_dir: Path,
    model_ops: set[str],
    layout_free: Sequence[str],
) -> tuple[list[str], dict[str, Any], str] | None:
    """The argv, the record and the words for `convert`'s next try, if any remedy is left."""
    import json

    missing = _NO_CONVERTER.search(failure.reason)
    if missing and missing.group(1) not in model_ops and "-nuo" not in argv:
        return (
            [*argv, "-nuo"],
            {"onnxsim": False},
            (f"onnxsim skipped (it wrote the {missing.group(1)} op onnx2tf cannot convert)"),
        )
    if layout_free and "-kat" not in argv:
        keep_calibration_layout(argv, layout_free)
        return (
            [*argv, "-kat", *layout_free],
            {"kept_input_layouts": list(layout_free)},
            f"the ONNX layout kept for the input(s) {', '.join(layout_free)} (no channels)",
        )
    generated = sorted(out_dir.glob("*_auto.json"))
    if "-prf" in argv or not generated:
        return None
    kept = cwd / "auto_replacement.json"
    shutil.copyfile(generated[0], kept)
    try:
        replacement = json.loads(kept.read_text(encoding="utf-8"))
        count = len(replacement.get("operations") or [])
    except (ValueError, AttributeError):
        return None
    return (
        [*argv, "-prf", str(kept.resolve())],
        {"auto_param_replacement": replacement},
        (f"the parameter replacement onnx2tf generated for it ({count} operation(s))"),
    )


def keep_calibration_layout(argv: list[str], names: Sequence[str]) -> None:
    """Rewrite, in place, the calibration file ``argv`` passes (``-cind NAME FILE``) for each
    of ``names`` from onnx2tf's input layout back to the ONNX one."""
    from .layout import onnx2tf_input_perm

    for index, arg in enumerate(argv[:-2]):
        if arg != "-cind" or argv[index + 1] not in names:
            continue
        path = Path(argv[index + 2])
        array = np.load(str(path))
        perm = onnx2tf_input_perm(array.ndim)
        if perm:
            np.save(str(path), np.ascontiguousarray(np.transpose(array, np.argsort(perm))))


_NO_CONVERTER = re.compile(r"No module named 'onnx2tf\.ops\.(\w+)'")


def remedy(reason: str, tool: str = "onnx2tf") -> str:
    """What to try after onnx2tf's failure ``reason`` (empty where nothing is known)."""
    if tool != "onnx2tf":
        return ""
    missing = _NO_CONVERTER.search(reason)
    if missing:
        return (
            f"; onnx2tf has no converter for the ONNX op {missing.group(1)}: re-export the "
            "model at an opset without it (torch.onnx.export(..., opset_version=17))"
        )
    if "(ONNX node '" in reason:
        return (
            "; where onnx2tf gave that node the wrong layout, its parameter replacement file "
            "fixes it: --set param_replacement=FILE.json (onnx2tf's JSON format, node names as "
            "printed here)"
        )
    return ""


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        proc.kill()
    proc.wait()


def expect_output(path: Path) -> Path:
    if not path.is_file():
        made = sorted(p.name for p in path.parent.glob("*.tflite"))
        raise RuntimeFailure(
            f"onnx2tf finished but did not write {path.name} (it wrote: "
            f"{', '.join(made) or 'no .tflite file'})"
        )
    return path


def calibration_arrays(
    samples: list[dict[str, np.ndarray]], perms: dict[str, list[int]], folder: Path
) -> dict[str, Path]:
    """One ``.npy`` per input: the samples stacked on the batch axis, TFLite layout; floats as
    float32, integer and boolean inputs in their own dtype (onnx2tf casts every calibration
    array to float32 itself, `selective` keeps their dtype)."""
    files: dict[str, Path] = {}
    for name, perm in perms.items():
        arrays = [np.asarray(s[name]) for s in samples]
        arrays = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]
        stacked = np.concatenate(arrays, axis=0)
        if perm:
            stacked = np.transpose(stacked, perm)
        path = folder / f"calibration_{len(files)}.npy"
        np.save(str(path), np.ascontiguousarray(stacked))
        files[name] = path
    return files


def sample_arrays(
    samples: list[dict[str, np.ndarray]],
    inputs: Sequence[Any],
    originals: dict[str, str],
    folder: Path,
) -> dict[str, Path]:
    """One ``.npy`` per input (keyed by the names ``samples`` use) holding the samples whole,
    stacked on a new axis 0, each in the layout its TFLite input takes (``inputs``: the
    `TensorMap` of each): `selective` feeds them one by one, so an input whose batch is not
    on axis 0 (an RNN state) is fed whole samples."""
    folder.mkdir(parents=True, exist_ok=True)
    by_onnx = {m.onnx_name: m for m in inputs}
    files: dict[str, Path] = {}
    for name in samples[0] if samples else {}:
        tensor = by_onnx[originals.get(name, name)]
        arrays = [tensor.to_tflite(np.asarray(s[name])) for s in samples]
        arrays = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]
        files[name] = folder / f"samples_{len(files)}.npy"
        np.save(str(files[name]), np.ascontiguousarray(np.stack(arrays)))
    return files


def onnx2tf_available() -> str | None:
    """Why onnx2tf cannot run here, or None when it can be found."""
    import importlib.util

    if importlib.util.find_spec("onnx2tf") is None:
        return (
            "onnx2tf is not installed here: compile in the tflite image (hub images build tflite)"
        )
    return None
