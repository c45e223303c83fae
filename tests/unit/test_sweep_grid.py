"""Sweep grids: the TOML file, its expansion into cells, and the cell keys --resume uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgehub.errors import UsageError
from edgehub.ops.sweep_grid import SweepCell, SweepGrid, load_grid, value_text


def _grid_file(tmp_path: Path, text: str) -> Path:
    for name in ("a.onnx", "b.onnx"):
        (tmp_path / name).write_bytes(name.encode())
    path = tmp_path / "grid.toml"
    path.write_text(text)
    return path


def test_grid_file_expands_to_every_combination(tmp_path: Path) -> None:
    path = _grid_file(
        tmp_path,
        '[sweep]\nstep = "profile"\nmodels = ["a.onnx", "b.onnx"]\ndevices = ["d1", "d2"]\n'
        '[sweep.vary]\n"compile.precision" = ["fp32", "int8"]\n"profile.input_shape" = '
        "[[1, 3, 8, 8]]\n",
    )
    grid = load_grid(path)
    grid.check()
    assert grid.step == "profile" and grid.runtimes == ["onnxruntime"]
    cells = grid.cells()
    assert len(cells) == 2 * 2 * 2
    assert {c.model.name for c in cells} == {"a.onnx", "b.onnx"}
    assert cells[0].settings == (
        ("compile.precision", "fp32"),
        ("profile.input_shape", [1, 3, 8, 8]),
    )
    assert [c.device for c in cells[:2]] == ["d1", "d2"], "devices alternate innermost"


def test_cell_keys_are_stable_and_distinct(tmp_path: Path) -> None:
    _grid_file(tmp_path, "")
    a = SweepCell(tmp_path / "a.onnx", "d1", "onnxruntime", (("runs", "10"),))
    assert a.key("pipeline") == SweepCell(a.model, "d1", "onnxruntime", a.settings).key("pipeline")
    others = [
        SweepCell(tmp_path / "b.onnx", "d1", "onnxruntime", a.settings),
        SweepCell(a.model, "d2", "onnxruntime", a.settings),
        SweepCell(a.model, "d1", "onnxruntime", (("runs", "20"),)),
    ]
    keys = {a.key("pipeline"), a.key("profile"), *(c.key("pipeline") for c in others)}
    assert len(keys) == 5
    before = a.key("pipeline")
    a.model.write_bytes(b"changed")
    assert a.key("pipeline") != before, "a changed model must be measured again"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[other]\n", "no [sweep] table"),
        ("[sweep]\nmodels = 3\n", "must be a list of strings"),
        ('[sweep]\nmodels = ["a.onnx"]\nmodles = []\n', "unknown [sweep] keys modles"),
        ("[sweep\n", "not valid TOML"),
    ],
)
def test_bad_grid_files(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle.replace("[", r"\[")):
        load_grid(_grid_file(tmp_path, text))


def test_check_names_what_is_wrong(tmp_path: Path) -> None:
    _grid_file(tmp_path, "")
    with pytest.raises(UsageError, match="no models"):
        SweepGrid(models=[]).check()
    with pytest.raises(UsageError, match=r"missing\.onnx not found"):
        SweepGrid(models=[tmp_path / "missing.onnx"]).check()
    with pytest.raises(UsageError, match="step 'compile' unknown"):
        SweepGrid(models=[tmp_path / "a.onnx"], step="compile").check()
    with pytest.raises(UsageError, match="'runs' has no values"):
        SweepGrid(models=[tmp_path / "a.onnx"], vary={"runs": []}).check()


def test_value_text() -> None:
    assert value_text(True) == "true"
    assert value_text([1, 3, 224, 224]) == "1,3,224,224"
    assert value_text(0.5) == "0.5"


def test_fixed_options_and_each_models_own_shape_and_inputs(tmp_path: Path) -> None:
    (tmp_path / "b_in.npz").write_bytes(b"")
    path = _grid_file(
        tmp_path,
        '[sweep]\nstep = "profile"\n[sweep.set]\nruns = 5\n'
        '[sweep.models."a.onnx"]\ninput_shape = [1, 3, 48, 192]\n'
        '[sweep.models."b.onnx"]\ninput_shape = {x = [1, 3, 8, 8], y = [1, 4]}\nruns = 7\n'
        'inputs = "b_in.npz"\n[sweep.vary]\nthreads = [1, 2]\n',
    )
    grid = load_grid(path)
    cells = grid.cells()
    assert [c.model.name for c in cells] == ["a.onnx"] * 2 + ["b.onnx"] * 2
    assert cells[0].settings == (("runs", 5), ("input_shape", [1, 3, 48, 192]), ("threads", 1))
    assert cells[3].settings == (
        ("runs", 7),
        ("input_shape", {"x": [1, 3, 8, 8], "y": [1, 4]}),
        ("threads", 2),
    )
    assert cells[3].label.endswith('runs=7 input_shape={"x": [1, 3, 8, 8], "y": [1, 4]} threads=2')
    assert cells[0].inputs is None and cells[3].inputs == tmp_path / "b_in.npz"
    assert cells[0].key("profile") != cells[1].key("profile")
    grid.fix("input_shape", "1x3x32x32")  # --set: the same in every cell
    assert {dict(c.settings)["input_shape"] for c in grid.cells()} == {"1x3x32x32"}
    grid.vary["runs"] = ["1", "2"]
    with pytest.raises(UsageError, match=r"'runs' is both fixed .* and varied"):
        grid.check()


def test_a_cells_key_is_the_same_for_data_and_its_text(tmp_path: Path) -> None:
    """Cells keep TOML values as data; their keys stay those of the text form, so `--resume`
    finds cells that earlier sweeps (which kept text) recorded."""
    model = tmp_path / "m.onnx"
    model.write_bytes(b"onnx")
    data = SweepCell(model, "local", "onnxruntime", (("runs", 5), ("input_shape", [1, 3, 8, 8])))
    text = SweepCell(model, "local", "onnxruntime", (("runs", "5"), ("input_shape", "1,3,8,8")))
    assert data.key("profile") == text.key("profile")
    assert data.label == text.label


def test_sweep_values_are_read_by_the_declared_types_without_text(tmp_path: Path) -> None:
    from edgehub.core.runtimes import get_runtime
    from edgehub.ops.execute import step_components
    from edgehub.ops.options import option_values

    components = step_components(get_runtime("onnxruntime"), "pipeline")
    items = [("runs", 5), ("input_shape", {"x": [1, 3, 8, 8]}), ("compile.calibration_data", "c")]
    values = option_values(items, components, given_as="sweep option")
    assert values["profile"] == {"runs": 5, "input_shape": {"x": [1, 3, 8, 8]}}
    assert values["compile"]["calibration_data"] == Path("c")  # declared a path
    with pytest.raises(UsageError, match=r"^ONNXRuntimeProfiler: option 'runs' must be"):
        option_values([("runs", 0)], components, given_as="sweep option")
    with pytest.raises(UsageError, match=r"option 'input_shape' must be a shape such as 1x3x224"):
        option_values([("input_shape", {"x": [1, -3]})], components)
    with pytest.raises(UsageError, match=r"^sweep option profile\.runz: unknown option 'runz'"):
        option_values([("profile.runz", 1)], components, given_as="sweep option")
