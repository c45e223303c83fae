"""The conformance matrix: every corpus model through every headline path, as a user runs them.

    python benchmarks/conformance.py                       # the whole corpus, every runtime
    python benchmarks/conformance.py --only yolo_det,ocr_cls --runtimes onnxruntime,tflite
    python benchmarks/conformance.py --write-readme        # the table into README.md
    python benchmarks/conformance.py --check               # exit 1 when a goal is missed

The corpus (`benchmarks/corpus/build.py`) is built first, or found in its cache. Each model
runs through the real ``hub`` in a project of its own, on the local device:

- ONNX Runtime: ``compile``, ``profile``, ``invoke`` (each at the model's ``input_shape``),
  ``pipeline --set input_shape=...``, ``eval --dataset`` (shapes and int8 calibration from the
  dataset) and ``eval --dataset --layers``;
- TFLite float32: ``pipeline --set input_shape=...`` (compile, profile, invoke, accuracy
  against ONNX Runtime);
- TFLite int8: ``eval --dataset --set precision=int8`` (calibrated on the dataset);
- TensorRT: ``compile --set target=sm86`` (an engine built ahead of time, no GPU needed).

A cell passes when the command exits 0 with no traceback; a failed cell keeps the command's
one-line error (its last ``hub: error:`` line). A runtime passes for a model when all of its
cells pass; the goals are the share of models passing per runtime (`GOALS`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HUB = str(Path(sys.executable).with_name("hub"))
BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"
COLUMNS = ("onnxruntime", "tflite float32", "tflite int8", "tensorrt aot")
GOALS = {"onnxruntime": 1.0, "tflite float32": 0.90, "tflite int8": 0.85, "tensorrt aot": 0.95}
TIMEOUT_S = 900


@dataclass
class Cell:
    """One command of one model: passed, its seconds, and why it failed."""

    step: str
    passed: bool
    seconds: float
    reason: str = ""


@dataclass
class Row:
    name: str
    family: str
    features: list[str]
    cells: dict[str, list[Cell]] = field(default_factory=dict)

    def passed(self, column: str) -> bool | None:
        cells = self.cells.get(column)
        return None if not cells else all(c.passed for c in cells)

    def reason(self, column: str, limit: int = 220) -> str:
        failed = [c for c in self.cells.get(column, []) if not c.passed]
        if not failed:
            return ""
        text = f"{failed[0].step}: {failed[0].reason}".replace("|", "/")
        return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(stderr: str) -> str:
    """The command's own error line, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("hub: error:")]
    if errors:
        return errors[-1].removeprefix("hub: error:").strip()
    return lines[-1] if lines else "no output"


def run_hub(step: str, args: list[str], project: Path) -> Cell:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [HUB, "-q", *args], cwd=project, capture_output=True, text=True, timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Cell(step, False, time.perf_counter() - started, f"timed out after {TIMEOUT_S} s")
    seconds = time.perf_counter() - started
    if "Traceback (most recent call last)" in done.stderr:
        return Cell(step, False, seconds, "traceback: " + one_line(done.stderr))
    if done.returncode != 0:
        return Cell(step, False, seconds, one_line(done.stderr))
    return Cell(step, True, seconds)


def plan(entry: dict[str, Any], model: str, dataset: str) -> dict[str, list[tuple[str, list[str]]]]:
    """Each column's commands for one corpus model."""
    shape = ["--set", f"input_shape={entry['input_shape']}"]
    data = ["--dataset", dataset]
    few = ["--set", "profile.runs=20"]  # the pipeline's profile: its figures are not the point
    return {
        "onnxruntime": [
            ("compile", ["exec", "compile", "onnxruntime", model, *shape]),
            ("profile", ["exec", "profile", "onnxruntime", model, *shape, "--set", "runs=20"]),
            ("invoke", ["exec", "invoke", "onnxruntime", model, *shape]),
            ("pipeline", ["exec", "pipeline", "onnxruntime", model, *shape, *few]),
            ("eval", ["exec", "eval", "onnxruntime", model, *data]),
            ("layers", ["exec", "eval", "onnxruntime", model, *data, "--layers"]),
        ],
        "tflite float32": [
            ("pipeline", ["exec", "pipeline", "tflite", model, *shape, *few]),
        ],
        "tflite int8": [
            ("eval", ["exec", "eval", "tflite", model, *data, "--set", "precision=int8"]),
        ],
        "tensorrt aot": [
            ("compile", ["exec", "compile", "tensorrt", model, *shape, "--set", "target=sm86"]),
        ],
    }


def corpus(only: list[str] | None) -> tuple[Path, list[dict[str, Any]]]:
    """Build (or find) the corpus; its folder and manifest entries, ``only`` those named."""
    command = [sys.executable, str(ROOT / "benchmarks" / "corpus" / "build.py")]
    if only:
        command += ["--only", ",".join(only)]
    done = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode != 0 and not done.stdout.strip():
        raise SystemExit(f"conformance: the corpus build failed (exit {done.returncode})")
    folder = Path(done.stdout.strip().splitlines()[-1])
    entries = json.loads((folder / "manifest.json").read_text())
    if only:
        entries = [e for e in entries if e["name"] in only]
        missing = sorted(set(only) - {e["name"] for e in entries})
        if missing:
            raise SystemExit(f"conformance: not in the corpus: {', '.join(missing)}")
    return folder, entries


def measure(folder: Path, entry: dict[str, Any], columns: list[str], work: Path) -> Row:
    row = Row(entry["name"], entry["family"], list(entry.get("features", [])))
    project = work / entry["name"]
    project.mkdir(parents=True)
    (project / "hub.toml").write_text(f'[project]\nname = "conformance-{entry["name"]}"\n')
    model = shutil.copy(folder / entry["file"], project / entry["file"])
    dataset = shutil.copy(folder / entry["dataset"], project / entry["dataset"])
    for column, steps in plan(entry, str(model), str(dataset)).items():
        if column not in columns:
            continue
        cells = row.cells.setdefault(column, [])
        for step, args in steps:
            cell = run_hub(step, args, project)
            cells.append(cell)
            mark = "ok" if cell.passed else f"FAILED: {cell.reason}"
            print(f"  {entry['name']} {column} {step}: {mark} ({cell.seconds:.1f} s)", flush=True)
    shutil.rmtree(project, ignore_errors=True)
    return row


def load_row(item: dict[str, Any]) -> Row:
    """A row of a saved ``--json`` file."""
    cells = {c: [Cell(**x) for x in xs] for c, xs in item["cells"].items()}
    return Row(item["name"], item["family"], list(item.get("features", [])), cells)


def shares(rows: list[Row], columns: list[str]) -> dict[str, float]:
    result = {}
    for column in columns:
        judged = [r.passed(column) for r in rows if r.passed(column) is not None]
        result[column] = sum(1 for p in judged if p) / len(judged) if judged else 0.0
    return result


def markdown(rows: list[Row], columns: list[str], seconds: float) -> str:
    header = "| model | family | features | " + " | ".join(columns) + " |"
    lines = [header, "|" + "---|" * (3 + len(columns))]
    for row in rows:
        cells = []
        for column in columns:
            passed = row.passed(column)
            cells.append("n/a" if passed is None else "pass" if passed else row.reason(column))
        features = ", ".join(row.features)
        lines.append(f"| {row.name} | {row.family} | {features} | " + " | ".join(cells) + " |")
    got = shares(rows, columns)
    lines.append(
        "| **passing** | | | "
        + " | ".join(f"**{got[c]:.0%}** (goal {GOALS[c]:.0%})" for c in columns)
        + " |"
    )
    minutes = seconds / 60
    lines.append("")
    lines.append(
        f"{len(rows)} models; produced by `python benchmarks/conformance.py --write-readme` "
        f"in {minutes:.0f} min on a 2-core machine."
    )
    return "\n".join(lines)


def write_readme(table: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"conformance: README.md has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated corpus model names")
    parser.add_argument(
        "--runtimes",
        default=",".join(COLUMNS),
        help=f"comma-separated columns (default: all: {', '.join(COLUMNS)})",
    )
    parser.add_argument("--write-readme", action="store_true", help="write the table to README")
    parser.add_argument("--json", type=Path, help="also write every cell to this file")
    parser.add_argument(
        "--from-json", type=Path, help="render an earlier run's --json file; run nothing"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a column misses its goal (with --only: any failure)",
    )
    args = parser.parse_args(argv)  # fmt: skip
    columns = [c.strip() for c in args.runtimes.split(",") if c.strip()]
    unknown = sorted(set(columns) - set(COLUMNS))
    if unknown:
        parser.error(f"unknown runtime columns {unknown}; known: {', '.join(COLUMNS)}")
    only = [n.strip() for n in args.only.split(",")] if args.only else None
    started = time.perf_counter()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        rows = [load_row(item) for item in saved["rows"]]
        seconds = float(saved["seconds"])
    else:
        folder, entries = corpus(only)
        print(f"conformance: {len(entries)} models from {folder}", flush=True)
        rows = []
        with tempfile.TemporaryDirectory(prefix="edgehub-conformance-") as work:
            for entry in entries:
                rows.append(measure(folder, entry, columns, Path(work)))
        seconds = time.perf_counter() - started
    table = markdown(rows, columns, seconds)
    print(table)
    if args.json:
        rows_json = [
            {"name": r.name, "family": r.family, "features": r.features,
             "cells": {c: [vars(x) for x in cells] for c, cells in r.cells.items()}}
            for r in rows
        ]  # fmt: skip
        args.json.write_text(json.dumps({"seconds": seconds, "rows": rows_json}, indent=2))
    if args.write_readme:
        write_readme(table)
    got = shares(rows, columns)
    if only:
        missed = [c for c in columns if got[c] < 1.0]
    else:
        missed = [c for c in columns if got[c] < GOALS[c]]
    for column in missed:
        print(f"conformance: {column} passes {got[column]:.0%} (goal {GOALS[column]:.0%})")
    print(f"conformance: {len(rows)} models in {seconds:.0f} s")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
