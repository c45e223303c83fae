"""A sweep's grid: models by devices by runtimes by option values, from a TOML file or flags.

A grid file::

    [sweep]
    step = "pipeline"                  # or "profile" (default: pipeline)
    models = ["a.onnx", "b.onnx"]      # paths relative to the grid file
    devices = ["board1", "board2"]     # hub.toml devices (default: local)
    runtimes = ["onnxruntime"]
    inputs = "inputs.npz"              # optional

    [sweep.vary]                       # every combination of these values
    "compile.precision" = ["fp32", "int8"]
    "profile.threads" = [1, 2]

A key of ``[sweep.vary]`` is a ``--set`` key (``step.option`` targets one step).
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgehub.errors import UsageError
from edgehub.user_files import input_data_path, regular_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the same parser, published as tomli
    tomllib = importlib.import_module("tomli")

__all__ = ["SWEEP_STEPS", "SweepCell", "SweepGrid", "load_grid", "value_text"]

SWEEP_STEPS = ("profile", "pipeline")


def value_text(value: Any) -> str:
    """A TOML value as the text ``--set`` takes (lists as ``1,3,224,224``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(value_text(v) for v in value)
    return str(value)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return "missing"
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class SweepCell:
    """One measurement of a sweep: a model on a device with one runtime and option values."""

    model: Path
    device: str
    runtime: str
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        values = " ".join(f"{k}={v}" for k, v in self.settings)
        return " ".join(p for p in (self.model.name, self.device, self.runtime, values) if p)

    def key(self, step: str, device: str | None = None) -> str:
        """Stable across processes: the step, the model (path and content), the device,
        runtime and values. ``device`` stands for the device (`run_sweep` passes its identity,
        see `~edgehub.ops.device_identity`); without it, its name (how earlier sweeps keyed
        their cells)."""
        model = str(self.model.resolve())
        parts = [step, model, _file_digest(self.model), device or self.device, self.runtime]
        parts += [f"{k}={v}" for k, v in sorted(self.settings)]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


@dataclass
class SweepGrid:
    """What a sweep runs; `cells` expands it (models outermost, option values innermost)."""

    models: list[Path]
    devices: list[str] = field(default_factory=lambda: ["local"])
    runtimes: list[str] = field(default_factory=lambda: ["onnxruntime"])
    vary: dict[str, list[str]] = field(default_factory=dict)
    step: str = "pipeline"
    inputs: Path | None = None

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

    def cells(self) -> list[SweepCell]:
        keys = list(self.vary)
        combos = list(itertools.product(*(self.vary[k] for k in keys)))
        return [
            SweepCell(model, device, runtime, tuple(zip(keys, combo, strict=True)))
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


def load_grid(path: Path) -> SweepGrid:
    """The grid of a TOML file (see the module docstring); paths are relative to the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read sweep grid {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"sweep grid {path} is not valid TOML: {error}") from None
    table = data.get("sweep")
    if not isinstance(table, dict):
        raise UsageError(f"{path}: no [sweep] table; see `hub exec sweep --help`")
    unknown = set(table) - {"step", "models", "devices", "runtimes", "inputs", "vary"}
    if unknown:
        raise UsageError(f"{path}: unknown [sweep] keys {', '.join(sorted(unknown))}")
    base = path.parent
    vary = table.get("vary", {})
    if not isinstance(vary, dict):
        raise UsageError(f"{path}: [sweep.vary] must be a table of KEY = [values]")
    grid = SweepGrid(
        models=[base / m for m in _strings(table, "models", str(path)) or []],
        vary={
            k: [value_text(x) for x in (v if isinstance(v, list) else [v])] for k, v in vary.items()
        },
        step=str(table.get("step", "pipeline")),
        inputs=base / table["inputs"] if isinstance(table.get("inputs"), str) else None,
    )
    for name in ("devices", "runtimes"):
        values = _strings(table, name, str(path))
        if values is not None:
            setattr(grid, name, values)
    return grid
