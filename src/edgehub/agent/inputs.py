"""What a command runs a model on: the caller's samples, or random data at chosen shapes.

``input_data`` is an ``.npz`` keyed by input name (a bare ``.npy`` for a one-input model), or a
directory of them, one sample per file, read in name order; every sample is checked against the
model's inputs. Without it, seeded random data of the inputs' dtypes at ``input_shape``
(:mod:`.shapes`), other dynamic dims 1 (with a warning). Also the batches' helpers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .protocol import CommandOutput, InputDataError, Params, RuntimeFailure, UsageError
from .report import Report
from .shapes import parse_input_shape, shape_example
from .tensors import Arrays, TensorSpec, check_arrays, describe_specs, load_inputs, random_inputs


def sample_files(directory: Path) -> list[Path]:
    """The sample files of a directory: its .npz files, else its .npy files, sorted by name."""
    files = sorted(p for p in directory.iterdir() if p.suffix == ".npz" and p.is_file())
    return files or sorted(p for p in directory.iterdir() if p.suffix == ".npy" and p.is_file())


def load_samples(path_arg: str, specs: Sequence[TensorSpec], what: str = "input") -> list[Arrays]:
    """One sample from a file, or one per file of a directory; each checked against ``specs``."""
    path = Path(path_arg)
    if not path.is_dir():
        return [load_inputs(path, specs, what)]
    files = sample_files(path)
    if not files:
        raise InputDataError(
            f"{what} directory '{path_arg}' holds no .npz or .npy files; expected inputs: "
            f"{describe_specs(specs)} (one sample per file)"
        )
    return [load_inputs(f, specs, f"{what} sample {f.name}") for f in files]


def dataset(
    samples: list[Arrays] | None, path_arg: str, stacked: bool, specs: Sequence[TensorSpec]
) -> list[Arrays]:
    """A batch's samples for a model of inputs ``specs``: read from ``path_arg`` (``stacked``:
    one .npz, `split_stacked`) where ``samples`` is None, else ``samples`` checked again."""
    if samples is None:
        return (split_stacked if stacked else load_samples)(path_arg, specs, "dataset")
    for number, sample in enumerate(samples):
        check_arrays(sample, specs, f"dataset sample #{number}")
    return samples


def stacked_info(outputs: Arrays) -> list[dict[str, Any]]:
    """``[{name, dtype, shape}]`` of a batch's outputs, stacked on a leading samples axis."""
    return [
        {"name": n, "dtype": a.dtype.name, "shape": [int(d) for d in a.shape[1:]]}
        for n, a in outputs.items()
    ]


class OutputStack:
    """A batch's outputs stacked over its ``count`` samples along a new leading axis, each
    sample's written in place into one array per output."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.stacked: dict[str, Any] = {}

    def add(self, index: int, name: str, value: Any) -> None:
        """Sample ``index``'s value of output ``name``; refused where its shape differs from
        sample #0's."""
        import numpy as np

        value = np.asarray(value)
        if index == 0:
            self.stacked[name] = np.empty((self.count, *value.shape), value.dtype)
        elif value.shape != self.stacked[name].shape[1:]:
            shapes = sorted({tuple(self.stacked[name].shape[1:]), tuple(value.shape)})
            raise RuntimeFailure(
                f"output '{name}' changes shape across samples ({shapes[:3]}...); "
                "eval compares outputs of one shape per dataset"
            )
        self.stacked[name][index] = value


def batch_request(params: Params, command: str) -> tuple[str, bool, list[Any]]:
    """A batch command's ``samples``, ``stacked`` and ``runs`` (a non-empty list)."""
    samples_arg = params.path("samples")
    stacked = params.boolean("stacked", False)
    runs = params.raw_value("runs")
    if not isinstance(runs, list) or not runs:
        raise UsageError(f"{command}: parameter 'runs' must be a non-empty list of runs")
    return samples_arg, stacked, runs


def batch_output(
    params: Params, results: list[dict[str, Any]], samples: list[Arrays] | None, *keys: str
) -> CommandOutput:
    """A batch's result: its runs' ``results``, with each of ``keys`` summed over them."""
    metrics = {key: sum(r[key] for r in results) for key in keys}
    data = {"samples": len(samples or []), "runs": results}
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)


def describe(feeds: Arrays) -> str:
    return ", ".join(
        f"{k}: {v.dtype.name}[{','.join(map(str, v.shape))}]" for k, v in feeds.items()
    )


def prepare_inputs(
    specs: Sequence[TensorSpec],
    input_data: str | None,
    raw_shape: Any,
    seed: int,
    report: Report,
) -> list[Arrays]:
    """The samples to run: loaded from ``input_data``, else one random sample (``input_shape``
    applies to random data only: given data brings its own shapes)."""
    if input_data is not None:
        if raw_shape is not None:
            raise UsageError(
                "input_shape shapes generated random inputs; input_data brings its own shapes: "
                "pass one of the two"
            )
        samples = load_samples(input_data, specs)
        count = f"{len(samples)} samples, " if len(samples) > 1 else ""
        report.info(f"inputs: {input_data} ({count}{describe(samples[0])})")
        return samples
    hint = "pass input_data (an .npz, or a directory of them) or input_shape to run at the shapes"
    feeds = random_sample(specs, raw_shape, seed, report, f"{hint} you use")
    report.info(f"inputs: random, seed {seed} ({describe(feeds)})")
    return [feeds]


def random_sample(
    specs: Sequence[TensorSpec], raw_shape: Any, seed: int, report: Report, hint: str
) -> Arrays:
    """Random data for ``specs`` from ``seed`` at ``input_shape`` ``raw_shape``; dynamic dims
    it leaves are 1, with a warning that ends in ``hint``."""
    shapes = parse_input_shape(raw_shape, specs) if raw_shape is not None else {}
    feeds, defaulted = random_inputs(specs, seed=seed, shapes=shapes)
    if defaulted:
        report.warn(
            f"random inputs with dynamic dimensions set to 1 for {', '.join(defaulted)}; {hint}"
        )
        note_guessed(report, {name: feeds[name] for name in defaulted}, specs, "input data")
    return feeds


def note_guessed(report: Report, guessed: Arrays, specs: Sequence[TensorSpec], data: str) -> None:
    """Keep on ``report`` what to add to a `RuntimeFailure` of a run on random ``guessed``
    inputs, whose dynamic dims were set to 1 (a model may not take that size)."""
    report.guessed_shapes = (
        f"the random inputs had their dynamic dims set to 1 ({describe(guessed)}), which the "
        f"model may not take: run it at the shapes you use with input_shape "
        f"({shape_example(specs)}) or with {data}"
    )


def shapes_record(samples: Sequence[Arrays]) -> dict[str, dict[str, Any]]:
    """``{input: {"dtype": ..., "shape": [...]}}`` of the first sample, with ``"shapes"`` (every
    distinct shape, in order of appearance) for an input whose shape varies across samples."""
    record: dict[str, dict[str, Any]] = {}
    for name, array in samples[0].items():
        seen: list[list[int]] = []
        for sample in samples:
            shape = [int(d) for d in sample[name].shape]
            if shape not in seen:
                seen.append(shape)
        entry: dict[str, Any] = {"dtype": array.dtype.name, "shape": seen[0]}
        if len(seen) > 1:
            entry["shapes"] = seen
        record[name] = entry
    return record


def split_stacked(
    path_arg: str,
    specs: Sequence[TensorSpec],
    what: str = "dataset",
    mapped: bool = False,
    max_unpacked: int | None = None,
) -> list[Arrays]:
    """The samples of one ``.npz`` whose arrays share a leading samples axis, each checked
    against ``specs`` (named ``#index`` in errors). As for calibration data, an array of the
    input's rank + 1 is split into ``arr[i]``, and one of the input's own rank whose first
    dimension is dynamic or 1 (batch-first) into ``arr[i:i+1]``. ``mapped``: the samples are
    views of the file mapped, read only where used (`load_arrays`, as ``max_unpacked``)."""
    from .tensors import load_arrays

    return split_arrays(load_arrays(path_arg, what, mapped, max_unpacked), path_arg, specs, what)


def split_arrays(
    loaded: Any, path_arg: str, specs: Sequence[TensorSpec], what: str = "dataset"
) -> list[Arrays]:
    """`split_stacked` on the arrays ``loaded`` from ``path_arg`` (a dict, or one array)."""
    samples = unstack(loaded, path_arg, specs, what)
    try:  # slices of the same arrays: every sample has the first one's names, dtypes, shapes
        check_arrays(samples[0], specs, f"{what} sample #0")
    except InputDataError as exc:
        raise InputDataError(
            f"{exc} (a single .npz holds every sample along a leading axis)"
        ) from exc
    return samples


def unstack(loaded: Any, path_arg: str, specs: Sequence[TensorSpec], what: str) -> list[Arrays]:
    """The samples of the arrays ``loaded`` from ``path_arg`` (a dict, or one array) split
    along their leading samples axis by `split_stacked`'s rule, not yet checked."""
    from .tensors import by_name

    loaded = by_name(loaded, specs, f"{what} '{path_arg}'")
    counts = {name: int(array.shape[0]) if array.ndim else 0 for name, array in loaded.items()}
    if not counts or 0 in counts.values():
        raise InputDataError(
            f"{what} '{path_arg}' holds no samples: save numpy.savez(path, input_name="
            f"numpy.stack(samples)) for inputs {describe_specs(specs)}"
        )
    if len(set(counts.values())) != 1:
        raise InputDataError(
            f"{what} '{path_arg}': arrays disagree on the number of samples "
            f"({', '.join(f'{k}: {v}' for k, v in counts.items())}); give every input the same "
            "leading samples axis"
        )
    ranks = {s.name: len(s.shape) for s in specs if s.shape is not None}
    batch_first = {
        s.name
        for s in specs
        if s.shape is not None and s.shape and (not isinstance(s.shape[0], int) or s.shape[0] == 1)
    }

    def take(name: str, array: Any, i: int) -> Any:
        if name in batch_first and array.ndim == ranks.get(name):
            return array[i : i + 1]
        return array[i]

    return [
        {name: take(name, array, i) for name, array in loaded.items()}
        for i in range(min(counts.values()))
    ]
