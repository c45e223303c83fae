"""The accuracy tab of an EVAL run's detail, and `eval` on the Run screen.

The tab is read from an EVAL run recorded as `ops.eval` records one (tests.tui.fixed_runs);
the eval launched from the Run screen goes through `ops.eval.evaluate` with the real Docker
daemon and the ONNX Runtime image, on a model built here whose third layer has an outlier
channel, and its run's accuracy tab then names that layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.tui.conftest import FROZEN_AT
from tests.tui.run_screen import launch, log_text, open_run_screen, option_field, until_all_ended
from tests.tui.runs_screen import open_newest_run
from textual.widgets import DataTable, Input, Select, TabbedContent

from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.clock import frozen_clock
from edgehub.tui.screens.run_detail import RunDetailScreen
from edgehub.tui.widgets.accuracy_view import FIRST_DIVERGENT
from edgehub.tui.widgets.run_pane import RunPane

pytestmark = pytest.mark.asyncio


async def _settle(pilot: Any) -> None:
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def _cells(table: DataTable[Any]) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def test_an_eval_run_opens_on_its_accuracy_tab(project: Path, eval_run: str) -> None:
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_newest_run(pilot)
        assert screen.run_id == eval_run
        tabs = screen.query_one("#run-tabs", TabbedContent)
        assert tabs.active == "tab-accuracy"
        summary = str(screen.query_one("#accuracy-summary").render())
        assert "8 samples: goals MISSED" in summary
        assert "MISSED  cosine>=0.99  (cosine of logits 0.789 vs 0.99)" in summary
        assert "passed  top1>=0.5*reference" in summary
        assert _cells(screen.query_one("#accuracy-tasks", DataTable)) == [
            ["top1", "0.75", "0.875", "-0.125"]
        ]
        figures = screen.query_one("#accuracy-figures", DataTable)
        assert [str(c.label) for c in figures.columns.values()][:3] == [
            "output", "cosine", "cosine min"
        ]  # fmt: skip
        assert _cells(figures)[0][:4] == ["logits", "0.789", "0.35", "41.5"]
        worst = _cells(screen.query_one("#accuracy-worst", DataTable))
        assert worst == [["logits", "004.npz", "0.35", "13"], ["logits", "001.npz", "0.42", "10"]]
        layers = screen.query_one("#accuracy-layers", DataTable)
        rows = _cells(layers)
        # measured layers in graph order, then a fused layer no measured one names
        assert [row[1] for row in rows] == ["relu1", "relu2", "relu3", "relu4", "conv6", "conv5"]
        assert rows[-1][-1] == "fused or renamed"
        assert rows[2][-1] == f"{FIRST_DIVERGENT} (with conv3)"
        assert rows[1][-1] == "(with conv2)"
        assert layers.cursor_row == 2  # on the first divergent layer

        def styles(row: int) -> str:
            return " ".join(str(span.style) for span in layers.get_row_at(row)[1].spans)

        assert "red" in styles(2) and "red" not in styles(1)
        # the latency tab, empty for an eval, is hidden; the others stay
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunDetailScreen)


async def test_other_runs_have_no_accuracy_tab(project: Path, fixed_runs: list[str]) -> None:
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_newest_run(pilot)
        assert not screen.query("#tab-accuracy")


async def test_the_run_screen_offers_eval_for_its_runtimes(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot)
        screen.query_one("#step", Select).value = "eval"
        await _settle(pilot)
        assert screen.query_one("#opt-eval").border_title == "eval options"
        assert screen.query("#opt-compile")  # the compiler's options follow
        screen.query_one("#runtime", Select).value = "tensorrt"  # evaluated on a GPU host
        await _settle(pilot)
        assert screen.query("#opt-eval") and screen.query("#opt-compile")
        # a launch without the required dataset marks the field, starts nothing
        screen.query_one("#runtime", Select).value = "onnxruntime"
        await _settle(pilot)
        screen.query_one("#model", Input).value = "model.onnx"
        await launch(pilot)
        assert not app.state.runs and not screen.query(RunPane)
        errors = [str(label.render()) for label in screen.query("#opt-eval .error.shown")]
        assert errors == ["dataset is required"]
        # a dataset or labels path that names nothing: said on its field, nothing starts
        option_field(screen, "eval", "dataset").value = "no-such-dir"
        option_field(screen, "eval", "labels").value = "labels.json"
        await launch(pilot)
        assert not app.state.runs and not screen.query(RunPane)
        errors = [str(label.render()) for label in screen.query("#opt-eval .error.shown")]
        assert errors == [
            "no-such-dir not found; give a directory of .npz samples or one .npz",
            "labels.json not found; give an .npz or .json of per-sample targets",
        ]


@pytest.mark.docker
async def test_eval_from_the_run_screen_names_the_first_divergent_layer(
    project: Path, ort_image: str
) -> None:
    from tests.integration.test_eval_cli import _outlier_model

    rng = np.random.default_rng(5)
    _outlier_model(project / "outlier.onnx", rng)
    (project / "ods").mkdir()
    for i in range(8):
        np.savez(project / "ods" / f"{i}.npz", x=rng.standard_normal((1, 3, 8, 8)).astype("f4"))
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot)
        screen.query_one("#step", Select).value = "eval"
        await _settle(pilot)
        screen.query_one("#model", Input).value = "outlier.onnx"
        option_field(screen, "eval", "dataset").value = "ods"
        option_field(screen, "eval", "layers").value = "0.2"
        option_field(screen, "eval", "goals").value = "cosine>=0.5"
        option_field(screen, "compile", "quantization").value = "static"
        option_field(screen, "compile", "calibration_data").value = "ods"
        await launch(pilot)
        assert app.state.runs
        await until_all_ended(pilot)
        (pane,) = screen.query(RunPane)
        text = log_text(pane)
        assert pane.status == "FINISHED", text
        assert "8 samples" in text and "first divergent layer: relu3" in text
        store = RunStore(project / ".hub")
        try:
            (run,) = [r for r in store.list_runs(limit=None) if r.run_type == "EVAL"]
        finally:
            store.close()
        assert run.params["first_divergent_layer"] == "relu3"

        detail = await open_newest_run(pilot)
        assert detail.run_id == run.run_id
        layers = detail.query_one("#accuracy-layers", DataTable)
        first = _cells(layers)[layers.cursor_row]
        assert first[1] == "relu3" and first[-1].startswith(FIRST_DIVERGENT)


async def test_a_damaged_eval_record_shows_what_it_can(tmp_path: Path) -> None:
    """Files of a record that are not what `ops.eval` writes (edited, truncated, another
    version) leave their part empty instead of failing the whole detail."""
    from edgehub.tui.accuracy_data import accuracy_of

    layers = tmp_path / "layers.json"
    layers.write_text('{"threshold": "high", "measured": [1, 2], "first_divergent": "x"}')
    per_sample = tmp_path / "per_sample.json"
    per_sample.write_text("{not json")
    accuracy = accuracy_of(
        {"goal_results": "nope", "worst_samples": {"logits": ["a.npz"]}, "task_metrics": 3},
        {"logits.cosine": 0.5, "goals_passed": 1.0, "samples": 2.0},
        {"layers": str(layers), "per_sample": str(per_sample)},
    )
    assert accuracy.layers is None and accuracy.goals == [] and accuracy.passed is True
    assert accuracy.figures == {"logits": {"cosine": 0.5}}
    assert accuracy.worst == [("logits", "a.npz", None, None)]
