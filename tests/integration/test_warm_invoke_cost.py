"""What a warm `hub exec invoke` does on the host, through the real CLI and Docker: an
``--input`` .npz is passed on and kept as the user's file (numpy never imported here, no copy
re-written), the run records the same params, metrics and artifacts with or without it, and
the result table drawn without Rich is the one Rich draws."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.cli.output import _Drawn
from edgehub.cli.plain_table import plain_table
from edgehub.tracking import hash_memo
from edgehub.tracking.artifacts import content_hash
from edgehub.tracking.hash_memo import HashMemo, stamp_key

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))


def _hub(
    project: Path, *args: str, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EDGEHUB_KEEP_WARM": "60"}
    argv = [sys.executable, *python_flags, "-m", "edgehub.cli.main"] if python_flags else [HUB]
    return subprocess.run(
        [*argv, *args], cwd=project, capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "warm-cost"\n')
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def _latest(project: Path) -> dict:
    shown = _hub(project, "runs", "show", "latest", "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


@pytest.mark.docker
def test_an_input_npz_is_passed_on_and_kept_as_given_without_numpy_here(project: Path) -> None:
    assert _hub(project, "-q", "exec", "invoke", "onnxruntime", "model.onnx").returncode == 0
    without = _latest(project)
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.savez(project / "x.npz", image=x)
    run = _hub(
        project, "-q", "exec", "invoke", "onnxruntime", "model.onnx", "--input", "x.npz",
        python_flags=("-X", "importtime"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
    assert "numpy" not in imported  # the file went as it is: nothing here read its arrays
    given = _latest(project)
    stored = {a["name"]: a for a in given["artifacts"]}
    user_sha = hashlib.sha256((project / "x.npz").read_bytes()).hexdigest()
    assert stored["input_data"]["sha256"] == user_sha
    assert stored["input_data"]["file_name"] == "input.npz"
    assert Path(stored["input_data"]["path"]).read_bytes() == (project / "x.npz").read_bytes()
    # what is recorded is the same with and without --input (names; values where not data)
    assert sorted(given["params"]) == sorted(without["params"])
    assert sorted(given["metrics"]) == sorted(without["metrics"])
    assert sorted(given["environment"]) == sorted(without["environment"])
    assert sorted(stored) == sorted(a["name"] for a in without["artifacts"])
    assert given["params"]["input_data"] == "in/input.npz"
    outputs = np.load(stored["output_file"]["path"])
    assert outputs["probabilities"].shape == (1, 10)


@pytest.mark.docker
def test_a_bad_input_npz_is_still_refused_here_in_one_line(project: Path) -> None:
    np.savez(project / "obj.npz", image=np.array([{"a": 1}], dtype=object))
    (project / "text.npz").write_text("not a zip")
    for name, needle in (("obj.npz", "Object arrays"), ("text.npz", "not a zip file")):
        run = _hub(project, "-q", "exec", "invoke", "onnxruntime", "model.onnx", "--input", name)
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr and needle in run.stderr, run.stderr


def _rich_table(headers: list[str], rows: list[list[str]]) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold", highlight=False
    )
    for header in headers:
        grid.add_column(header, no_wrap=True)
    for row in rows:
        grid.add_row(*(Text(cell) for cell in row))
    drawn = _Drawn("utf-8")
    Console(file=drawn, force_terminal=False, width=1 << 16, legacy_windows=False).print(grid)
    return "".join(line.rstrip() + "\n" for line in drawn.getvalue().splitlines())


def test_the_plain_table_is_the_one_rich_draws_on_a_pipe() -> None:
    rng = random.Random(7)
    letters = string.printable[:95]
    drawn = 0
    for _ in range(300):
        count = rng.randint(1, 5)
        headers = ["".join(rng.choices(letters, k=rng.randint(0, 8))) for _ in range(count)]
        rows = [
            [
                "".join(rng.choices(letters, k=rng.randint(0, 12)))
                for _ in range(rng.randint(0, count))
            ]
            for _ in range(rng.randint(0, 4))
        ]
        plain = plain_table(headers, rows, "utf-8")
        if plain is not None:
            drawn += 1
            assert plain == _rich_table(headers, rows), (headers, rows)
    assert drawn > 250
    assert plain_table(["név"], [["é"]], "utf-8") is None  # not ASCII: Rich draws it
    assert plain_table(["a"], [["b"]], "ascii") is None  # Rich's ASCII rules


def test_a_small_file_is_hashed_not_looked_up_in_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large = tmp_path / "model.onnx", tmp_path / "large.bin"
    small.write_bytes(b"weights" * 100)
    large.write_bytes(b"\0" * hash_memo.SMALL_BYTES)
    planted = "0" * 64  # what the memo says of both, as it is now: only the large one asks it
    memo_file = tmp_path / "hashes.json"
    entries = {stamp_key(path.stat()): planted for path in (small, large)}
    memo_file.write_text(json.dumps({"version": 1, "hashes": entries}))
    memo_file.chmod(0o600)
    monkeypatch.setattr(hash_memo, "_memo", HashMemo(memo_file))
    assert content_hash(small) == hashlib.sha256(b"weights" * 100).hexdigest()
    assert content_hash(large) == planted


def test_the_printed_table_on_a_pipe_is_unchanged() -> None:
    from edgehub.cli.output import table

    class Pipe(io.StringIO):
        encoding = "utf-8"

    out = Pipe()
    table(["output", "dtype", "shape"], [["probabilities", "float32", "1x10"]], stream=out)
    assert out.getvalue() == _rich_table(
        ["output", "dtype", "shape"], [["probabilities", "float32", "1x10"]]
    )
