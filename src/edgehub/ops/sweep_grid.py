"""A sweep's grid: models by devices by runtimes by option values, from a TOML file or flags.

A grid file::

    [sweep]
    step = "pipeline"                  # or "profile" (default: pipeline)
    models = ["a.onnx", "b.onnx"]      # paths relative to the grid file
    devices = ["board1", "board2"]     # hub.toml devices (default: local)
    runtimes = [...]                   # registered runtimes (default: the reference runtime)
    inputs = "inputs.npz"              # optional

    [sweep.vary]                       # every combination of these values
    "compile.precision" = ["fp32", "int8"]
    "profile.threads" = [1, 2]

A key of ``[sweep.vary]`` is a ``--set`` key (``step.option`` targets one step). Options that
stay the same in every cell go in ``[sweep.set]`` (``--set`` on the command line replaces them).
Values are kept as given (TOML data, or text from the command line) and read by each option's
declared type when the sweep runs (`edgehub.ops.options.option_values`).
Each model may bring its own options and inputs, with ``models`` as a table::

    [sweep.models."a.onnx"]
    input_shape = "1x3x224x224"
    [sweep.models."b.onnx"]
    input_shape = "x:1x3x48x192,y:1x4"
    inputs = "b_inputs.npz"            # this model's inputs (else [sweep] inputs)

A model's options override ``[sweep.set]``; an option both fixed and varied is refused.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgehub.config.load import TOMLDecodeError, parse_toml
from edgehub.core.runtimes import reference_runtime
from edgehub.errors import UsageError
from edgehub.fsutil import sha256_file
from edgehub.user_files import input_data_path, regular_file

SWEEP_STEPS = ("profile", "pipeline")


def value_text(value: Any) -> str:
    """A value as shown in labels and cell keys (lists as ``1,3,224,224``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(value_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def _file_digest(path: Path) -> str:
    try:
        return sha256_file(path)[:16]
    except OSError:
        return "missing"


@dataclass(frozen=True)
class SweepCell:
    """One measurement of a sweep: a model on a device with one runtime and option values."""

    model: Path
    device: str
    runtime: str
    settings: tuple[tuple[str, Any], ...] = ()  # option key -> value as given
    inputs: Path | None = None  # this model's own inputs (``[sweep.models."m"] inputs``)

    @property
    def label(self) -> str:
        values = " ".join(f"{k}={value_text(v)}" for k, v in self.settings)
        return " ".join(p for p in (self.model.name, self.device, self.runtime, values) if p)

    def key(self, step: str, device: str | None = None) -> str:
        """Stable across processes: the step, the model (path and content), the device,
        runtime and values. ``device`` stands for the device (`run_sweep` passes its identity,
        see `~edgehub.ops.device_identity`); without it, its name (how earlier sweeps keyed
        their cells)."""
        model = str(self.model.resolve())
        parts = [step, model, _file_digest(self.model), device or self.device, self.runtime]
        parts += [f"{k}={v}" for k, v in sorted((k, value_text(v)) for k, v in self.settings)]
        if self.inputs is not None:
            parts.append(f"inputs={_file_digest(self.inputs)}")
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


@dataclass
class SweepGrid:
    """What a sweep runs; `cells` expands it (models outermost, option values innermost)."""

    models: list[Path]
    devices: list[str] = field(default_factory=lambda: ["local"])
    runtimes: list[str] = field(default_factory=lambda: [reference_runtime().name])
    vary: dict[str, list[Any]] = field(default_factory=dict)
    step: str = "pipeline"
    inputs: Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # every cell's ([sweep.set])
    model_settings: dict[Path, dict[str, Any]] = field(default_factory=dict)
    model_inputs: dict[Path, Path] = field(default_factory=dict)

    def fix(self, key: str, value: Any) -> None:
        """``--set``: ``key`` is ``value`` in every cell, replacing the grid file's values."""
        self.settings[key] = value
        for options in self.model_settings.values():
            options.pop(key, None)

    def _fixed(self, model: Path) -> dict[str, Any]:
        return {**self.settings, **self.model_settings.get(model, {})}

    def check(self) -> None:
        if self.step not in SWEEP_STEPS:
            raise UsageError(f"sweep step {self.step!r} unknown; use {' or '.join(SWEEP_STEPS)}")
        if not self.models:
            raise UsageError("the sweep has no models; list them in [sweep] models or --models")
        for model in self.models:
            regular_file(model, "sweep model")
        for name, values in (("devices", self.devices), ("runtimes", self.runtimes)):
            if not values:
                raise UsageError(f"the sweep has no {name}; give at least one")
        for key, options in self.vary.items():
            if not options:
                raise UsageError(f"sweep option {key!r} has no values; give at least one")
        if self.inputs is not None:
            input_data_path(self.inputs, "sweep inputs")
        for model, path in self.model_inputs.items():
            input_data_path(path, f"sweep inputs of {model.name}")
        for model in self.models:
            both = sorted(set(self._fixed(model)) & set(self.vary))
            if both:
                raise UsageError(
                    f"sweep option {both[0]!r} is both fixed (--set, [sweep.set] or the model's "
                    "table) and varied (--vary, [sweep.vary]); give it one way"
                )

    def cells(self) -> list[SweepCell]:
        keys = list(self.vary)
        combos = list(itertools.product(*(self.vary[k] for k in keys)))
        return [
            SweepCell(
                model,
                device,
                runtime,
                (*self._fixed(model).items(), *zip(keys, combo, strict=True)),
                self.model_inputs.get(model),
            )
            for model in self.models
            for runtime in self.runtimes
            for combo in combos
            for device in self.devices
        ]


def _strings(table: dict[str, Any], key: str, where: str) -> list[str] | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: [sweep] {key} must be a list of strings")
    return list(value)


def _model_tables(grid: SweepGrid, models: dict[str, Any], path: Path) -> None:
    """``[sweep.models."m.onnx"]`` tables: each model's options and ``inputs``."""
    for name, options in models.items():
        if not isinstance(options, dict):
            raise UsageError(
                f'{path}: [sweep.models."{name}"] must be a table of KEY = value (an option, '
                "or inputs = FILE)"
            )
        model = path.parent / name
        grid.models.append(model)
        inputs = options.get("inputs")
        if inputs is not None:
            if not isinstance(inputs, str):
                raise UsageError(f'{path}: [sweep.models."{name}"] inputs must be a file path')
            grid.model_inputs[model] = path.parent / inputs
        grid.model_settings[model] = {k: v for k, v in options.items() if k != "inputs"}


def load_grid(path: Path) -> SweepGrid:
    """The grid of a TOML file (see the module docstring); paths are relative to the file."""
    try:
        data = parse_toml(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read sweep grid {path}: {error.strerror}") from None
    except TOMLDecodeError as error:
        raise UsageError(f"sweep grid {path} is not valid TOML: {error}") from None
    table = data.get("sweep")
    if not isinstance(table, dict):
        raise UsageError(f"{path}: no [sweep] table; see `hub exec sweep --help`")
    unknown = set(table) - {"step", "models", "devices", "runtimes", "inputs", "vary", "set"}
    if unknown:
        raise UsageError(f"{path}: unknown [sweep] keys {', '.join(sorted(unknown))}")
    base = path.parent
    vary = table.get("vary", {})
    if not isinstance(vary, dict):
        raise UsageError(f"{path}: [sweep.vary] must be a table of KEY = [values]")
    fixed = table.get("set", {})
    if not isinstance(fixed, dict):
        raise UsageError(f"{path}: [sweep.set] must be a table of KEY = value")
    models = table.get("models")
    grid = SweepGrid(
        models=[]
        if isinstance(models, dict)
        else [base / m for m in _strings(table, "models", str(path)) or []],
        vary={k: list(v) if isinstance(v, list) else [v] for k, v in vary.items()},
        step=str(table.get("step", "pipeline")),
        inputs=base / table["inputs"] if isinstance(table.get("inputs"), str) else None,
        settings=dict(fixed),
    )
    if isinstance(models, dict):
        _model_tables(grid, models, path)
    for name in ("devices", "runtimes"):
        values = _strings(table, name, str(path))
        if values is not None:
            setattr(grid, name, values)
    return grid


def listed(text: str) -> list[str]:
    """The items of a comma-separated list (``--models``, a form's field), blanks dropped."""
    return [part.strip() for part in text.split(",") if part.strip()]


def vary_pair(text: str) -> tuple[str, list[str]] | None:
    """``KEY=V1,V2`` as the option and its values, split on ``;`` where the text has one (values
    keep their commas); None without ``=`` or a value."""
    key, sep, values = text.partition("=")
    items = [v.strip() for v in values.split(";" if ";" in values else ",") if v.strip()]
    return (key.strip(), items) if sep and items else None


def build_grid(
    file: Path | None,
    *,
    models: list[Path],
    devices: list[str],
    runtimes: list[str],
    vary: Iterable[tuple[str, list[str]]],
    fixed: Iterable[tuple[str, Any]] = (),
    step: str | None = None,
) -> SweepGrid:
    """The grid of a front end (`hub exec sweep`, the TUI's Sweep form): ``file``'s (else an
    empty one), each list given replacing the file's, the values of ``vary`` (a key given twice
    gets both) and the ``fixed`` options (``--set``) replacing the file's values of theirs.
    ``vary`` and ``fixed`` are read after the file. Unchecked (`SweepGrid.check`)."""
    grid = load_grid(file) if file else SweepGrid(models=[])
    grid.models = models or grid.models
    grid.devices = devices or grid.devices
    grid.runtimes = runtimes or grid.runtimes
    varied: dict[str, list[str]] = {}
    for key, values in vary:
        varied.setdefault(key, []).extend(values)
    grid.vary.update(varied)
    for key, value in fixed:
        if key not in varied:
            grid.vary.pop(key, None)  # replaces the grid file's values of that option
        grid.fix(key, value)
    grid.step = step or grid.step
    return grid
