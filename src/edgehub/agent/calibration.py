"""Calibration samples for static quantization: from files, or random (with a warning).

``calibration`` is an ``.npz`` whose arrays, keyed by input name, have a leading samples axis
(an array of the input's rank + 1 is split into ``arr[i]``, one of the input's rank, batch
first, into ``arr[i:i+1]``; every input with the same count), or a directory of ``.npz`` files
(one sample each; ``.npy`` files for a one-input model), read in name order. Every sample is
checked against the model's inputs; a float64 array for a float32 input is cast (with a
warning), anything else is a CalibrationDataError listing the expected inputs. Nothing is
ever unpickled.

`warn_if_few`: an activation's range comes from the samples, so fewer than
``max(MIN_SAMPLES, C)`` draw a warning, ``C`` the most output channels of a layer with weights
(Conv, ConvTranspose, Gemm, MatMul).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .inputs import note_guessed, sample_files, unstack
from .protocol import CalibrationDataError, InputDataError
from .report import Report
from .tensors import Arrays, TensorSpec, check_arrays, describe_specs, load_arrays, random_inputs


def _expected(specs: Sequence[TensorSpec]) -> str:
    return f"expected inputs: {describe_specs(specs)}"


def _cast_floats(sample: Arrays, specs: Sequence[TensorSpec], casts: list[str]) -> Arrays:
    out = dict(sample)
    for spec in specs:
        array = out.get(spec.name)
        if array is None or array.dtype.name == spec.dtype:
            continue
        if array.dtype.kind == "f" and spec.dtype in ("float16", "float32", "float64"):
            out[spec.name] = array.astype(spec.dtype)
            if spec.name not in casts:
                casts.append(spec.name)
    return out


def _from_directory(directory: Path, specs: Sequence[TensorSpec]) -> list[Arrays]:
    files = sample_files(directory)
    if not files:
        raise CalibrationDataError(
            f"calibration directory '{directory}' holds no .npz or .npy files; {_expected(specs)}"
        )
    npz = files[0].suffix == ".npz"
    if not npz and len(specs) != 1:
        raise CalibrationDataError(
            f"calibration directory '{directory}' holds .npy files but the model has "
            f"{len(specs)} inputs: use one .npz per sample keyed by input name; {_expected(specs)}"
        )
    samples = []
    for path in files:
        loaded = load_arrays(path, "calibration")
        if isinstance(loaded, dict) != npz:
            kind = "an .npz archive" if npz else "a .npy array"
            raise CalibrationDataError(f"calibration file '{path}' is not {kind}")
        samples.append(loaded if isinstance(loaded, dict) else {specs[0].name: loaded})
    return samples


def load_calibration(path_arg: str, specs: Sequence[TensorSpec], report: Report) -> list[Arrays]:
    """Calibration samples from an .npz file or a directory, checked against ``specs``."""
    path = Path(path_arg)
    if not path.exists():
        raise CalibrationDataError(f"calibration data '{path_arg}' does not exist: check the path")
    if path.is_dir():
        samples = _from_directory(path, specs)
    else:
        loaded = load_arrays(path, "calibration")
        if isinstance(loaded, dict) and sorted(loaded) != sorted(s.name for s in specs):
            raise CalibrationDataError(
                f"calibration file '{path_arg}' has arrays {sorted(loaded)}, not the model's "
                f"inputs; {_expected(specs)} (leading axis = samples)"
            )
        try:  # split by `..inputs.split_stacked`'s rule; checked below, after the casts
            samples = unstack(loaded, path_arg, specs, "calibration file")
        except InputDataError as exc:
            raise CalibrationDataError(str(exc)) from exc
    if not samples:
        raise CalibrationDataError(f"calibration data '{path_arg}' holds no samples")
    casts: list[str] = []
    checked = []
    for index, sample in enumerate(samples):
        sample = _cast_floats(sample, specs, casts)
        try:
            check_arrays(sample, specs, what=f"calibration sample #{index}")
        except InputDataError as exc:
            raise CalibrationDataError(str(exc)) from exc
        checked.append(sample)
    if casts:
        report.warn(f"calibration data for {', '.join(casts)} was cast to the model's float dtype")
    return checked


MIN_SAMPLES = 16


def widest_layer(model: Any) -> tuple[str, int] | None:
    """(node name, output channels) of the layer with weights that has the most output
    channels (read from its weight initializer's shape), or None where no layer has one."""
    weights = {init.name: list(init.dims) for init in model.graph.initializer}
    best: tuple[str, int] | None = None
    for index, node in enumerate(model.graph.node):
        dims = weights.get(node.input[1]) if len(node.input) > 1 else None
        if not dims or len(dims) < 2:
            continue
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Conv":
            channels = dims[0]
        elif node.op_type == "ConvTranspose":
            channels = dims[1] * (attrs["group"].i if "group" in attrs else 1)
        elif node.op_type == "Gemm":
            channels = dims[0] if "transB" in attrs and attrs["transB"].i else dims[1]
        elif node.op_type == "MatMul":
            channels = dims[-1]
        else:
            continue
        if best is None or channels > best[1]:
            best = (node.name or f"{node.op_type}_{index}", int(channels))
    return best


def warn_if_few(count: int, model: Any, report: Report) -> None:
    """Warn when ``count`` calibration samples are fewer than the rule (module docstring)
    asks of ``model``."""
    widest = widest_layer(model)
    channels = widest[1] if widest else 0
    need = max(MIN_SAMPLES, channels)
    if count >= need:
        return
    why = f"{channels} in {widest[0]}" if widest else "none found"
    report.warn(
        f"calibration has {count} samples, fewer than the {need} this model needs (rule: at "
        f"least max({MIN_SAMPLES}, the most output channels of a layer: {why})); activation "
        f"ranges from so few samples may clip: give {need} or more"
    )


def calibration_samples(
    path_arg: str | None,
    specs: Sequence[TensorSpec],
    count: int,
    seed: int,
    model: Any,
    report: Report,
) -> list[Arrays]:
    """The samples in ``path_arg`` (`load_calibration`; `warn_if_few` for ``model``), else
    ``count`` random ones from ``seed``, with a warning."""
    if path_arg is not None:
        samples = load_calibration(path_arg, specs, report)
        warn_if_few(len(samples), model, report)
        return samples
    drawn = [random_inputs(specs, seed=seed + i) for i in range(count)]
    samples = [feeds for feeds, _ in drawn]
    guessed = drawn[0][1]
    if guessed:
        note_guessed(report, {n: samples[0][n] for n in guessed}, specs, "calibration data")
    report.warn(
        f"no calibration data: calibrated on {count} random samples (dynamic dims set to 1), so "
        "the int8 accuracy will be poor; pass calibration (an .npz keyed by input name with a "
        "leading samples axis, or a directory of one .npz per sample) drawn from real inputs"
    )
    return samples
