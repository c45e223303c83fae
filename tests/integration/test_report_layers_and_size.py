"""`hub runs report` at size, and its per-layer axis of ONNX node names.

Size: a real layerwise profile (`hub exec profile onnxruntime`, in the ORT image) of a
1,000-node ONNX chain made with onnx.helper, paired with a second one, and a 100-cell sweep,
reported together, must stay under the 5 MB the issue sets. The sweep's cells are not measured
(100 real cells take minutes): `run_sweep` runs a real 10 x 10 grid with an executor that
records each cell run as `SweepSession` does (a SWEEP_CELL child run, its headline metrics
and its ``cell`` param) with numbers made up here; the SWEEP run and its ``sweep`` artifact
are the product's own.

Layers: tiny_cnn profiled layerwise; ONNX Runtime names its NCHWc Convs after the tensor the
fused Conv+Relu writes (``r1_nchwc``), so the report must draw them on ``conv1+relu1``, the
runtime's own ReorderOutput layers kept and marked unmapped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker]

pytest.importorskip("bokeh", reason="needs the report extra (pip install -e '.[report]')")
onnx = pytest.importorskip("onnx", reason="the onnx package builds the 1,000-layer model")

HUB = str(Path(sys.executable).with_name("hub"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
LAYERS = 1000
LIMIT = 5_000_000


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([HUB, *args], cwd=cwd, capture_output=True, text=True,
                            env=dict(os.environ), timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def _chain(path: Path, count: int) -> None:
    """``count`` cheap nodes in a chain (Add of a constant, then Relu, alternating)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes, previous = [], "x"
    for i in range(count):
        op, inputs = ("Add", [previous, "one"]) if i % 2 == 0 else ("Relu", [previous])
        nodes.append(helper.make_node(op, inputs, [f"t{i}"], name=f"{op.lower()}{i}"))
        previous = f"t{i}"
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 16])],
        [numpy_helper.from_array(np.ones([1], np.float32), "one")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _profile(folder: Path, model: str, runs: int) -> dict[str, Any]:
    out = hub("exec", "profile", "onnxruntime", model, "--set", f"runs={runs}",
              "--set", "profiling_method=layerwise", "--json", cwd=folder)  # fmt: skip
    found: dict[str, Any] = json.loads(out.stdout)
    return found


class _RecordedCells:
    """A `CellExecutor` that records each cell's run as `SweepSession` does, with made-up
    headline numbers in place of a measurement (in a worker thread, as `LocalExecutor`)."""

    def run_cells(self, session: Any, pending: list[Any]) -> None:
        worker = threading.Thread(target=self._record, args=(session, pending))
        worker.start()
        worker.join()

    def _record(self, session: Any, pending: list[Any]) -> None:
        from edgehub.ops.sweep import CELL_RUN, _metrics
        from edgehub.ops.sweep_grid import value_text

        with session.project.context() as ctx:
            for i, (cell, result) in enumerate(pending):
                with ctx.open_run(CELL_RUN, cell.label, parent_run_id=session.parent) as run:
                    result.run_id = run.run_id
                    ctx.client.log_params(
                        {"model": result.model, "device": cell.device, "runtime": cell.runtime}
                    )
                    ctx.client.log_params({f"set.{k}": value_text(v) for k, v in cell.settings})
                    result.median_ms, result.p99_ms = 1.0 + i / 10, 2.0 + i / 7
                    result.cosine_similarity, result.max_abs_error = 1.0 - i / 1e4, i / 1e3
                    result.status = "FINISHED"
                    ctx.client.log_metrics(_metrics(result))
                    ctx.client.log_param("cell", json.dumps(result.to_dict()))
                session.notify(result)


def _sweep(folder: Path) -> str:
    from edgehub.ops.project import open_project
    from edgehub.ops.sweep import run_sweep
    from edgehub.ops.sweep_grid import SweepGrid

    models = []
    for i in range(10):
        model = folder / f"model{i}.onnx"
        _chain(model, 2 + i)
        models.append(model)
    grid = SweepGrid(models=models, vary={"runs": [10 * (k + 1) for k in range(10)]})
    report = run_sweep(open_project(folder / "hub.toml"), grid, executor=_RecordedCells())
    assert len(report.cells) == 100 and not report.failed
    return report.run_id


def _plots(page: str) -> dict[str, dict[str, Any]]:
    """The page's Bokeh figures by name (their attributes, references resolved one deep)."""
    found = re.search(r'<script type="application/json" id="[^"]+">\s*(.*?)\s*</script>', page,
                      re.S)  # fmt: skip
    assert found is not None
    plots: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            attributes = node.get("attributes") or {}
            if node.get("name") == "Figure" and "name" in attributes:
                plots[attributes["name"]] = attributes
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(found.group(1)))
    return plots


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, ort_image: str) -> Path:
    folder = tmp_path_factory.mktemp("report-size")
    (folder / "hub.toml").write_text('[project]\nname = "report-size"\n')
    (folder / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    _chain(folder / "chain.onnx", LAYERS)
    return folder


def test_a_1000_layer_pair_and_a_100_cell_sweep_stay_under_5_mb(folder: Path) -> None:
    profiles = [_profile(folder, "chain.onnx", runs) for runs in (50, 2000)]
    assert [p["metrics"]["num_layers"] for p in profiles] == [LAYERS, LAYERS]
    sweep = _sweep(folder)
    out = hub("runs", "report", *(p["run_id"] for p in profiles), "--sweep", sweep,
              "-o", "big.html", cwd=folder)  # fmt: skip
    size = (folder / "big.html").stat().st_size
    assert "big.html" in out.stdout and size < LIMIT, f"{size / 1e6:.2f} MB"
    plots = _plots((folder / "big.html").read_text(encoding="utf-8"))
    nodes = plots["layers"]["y_range"]["attributes"]["factors"]
    assert len(nodes) == LAYERS and {"add0", "relu999"} <= set(nodes)  # every node, by name
    assert {f"sweep-{m}" for m in ("median_ms", "p99_ms", "cosine_similarity")} <= set(plots)
    rows = plots["sweep-median_ms"]["y_range"]["attributes"]["factors"]
    assert len(rows) == 100  # 10 models x 10 values of runs, one device


def test_tiny_cnn_layers_are_drawn_on_its_onnx_nodes(folder: Path) -> None:
    run = _profile(folder, "tiny_cnn.onnx", 20)["run_id"]
    hub("runs", "report", run, "-o", "tiny.html", cwd=folder)
    nodes = _plots((folder / "tiny.html").read_text(encoding="utf-8"))["layers"]["y_range"]
    shown = list(reversed(nodes["attributes"]["factors"]))  # top to bottom: graph order
    graph = [n.name for n in onnx.load(str(EXAMPLE)).graph.node]
    mapped = [n for n in shown if not n.endswith(" (unmapped)")]
    # every ONNX node drawn once, fused Conv+Relu pairs grouped, in graph order
    assert [n for group in mapped for n in group.split("+")] == graph
    assert {"conv1+relu1", "conv2+relu2"} <= set(mapped)
    unmapped = shown[len(mapped) :]
    assert unmapped and all(n.startswith("ReorderOutput") for n in unmapped)  # runtime's own
