"""The parts of `hub exec eval` that need no container: figures, task metrics, goals, datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.errors import InputDataError, UsageError
from edgehub.ops.eval.goals import check_goal, parse_goal
from edgehub.toolchains.datasets import load_dataset, tensor_specs
from edgehub.toolchains.metrics import (
    IDENTICAL_DB,
    output_figures,
    score,
    summarize_figures,
    task_metric,
)

SPECS = tensor_specs([{"name": "x", "dtype": "float32", "shape": ["N", 4]}])


def test_output_figures_match_numpy() -> None:
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((6, 1, 10)).astype(np.float32)
    out = ref + 0.05 * rng.standard_normal((6, 1, 10)).astype(np.float32)
    figures = output_figures(out, ref)
    for i in range(6):
        a, b = out[i].ravel().astype(np.float64), ref[i].ravel().astype(np.float64)
        assert figures["cosine"][i] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        assert figures["max_abs"][i] == pytest.approx(np.max(np.abs(a - b)))
        assert figures["mean_abs"][i] == pytest.approx(np.mean(np.abs(a - b)))
        noise = np.mean((a - b) ** 2)
        assert figures["snr_db"][i] == pytest.approx(10 * np.log10(np.mean(b**2) / noise))
        assert figures["psnr_db"][i] == pytest.approx(10 * np.log10(np.ptp(b) ** 2 / noise))
    summary = summarize_figures(figures)
    assert summary["cosine_min"] == min(figures["cosine"])
    assert summary["max_abs"] == max(figures["max_abs"])
    assert summary["cosine"] == pytest.approx(np.mean(figures["cosine"]))


def test_identical_and_zero_outputs() -> None:
    zeros = np.zeros((2, 3), np.float32)
    figures = output_figures(zeros, zeros)
    assert figures["cosine"] == [1.0, 1.0]
    assert figures["snr_db"] == [IDENTICAL_DB, IDENTICAL_DB]
    ones = np.ones((2, 3), np.float32)
    assert output_figures(zeros, ones)["cosine"] == [0.0, 0.0]


def test_top_k_against_labels_and_reference() -> None:
    logits = np.array([[[0.1, 0.9, 0.0]], [[0.8, 0.1, 0.1]], [[0.2, 0.3, 0.5]]], np.float32)
    labels = [np.array(1), np.array(1), np.array(0)]
    top1, ref_top1 = score("top1", task_metric("top1"), logits, logits, labels)
    assert top1 == [1.0, 0.0, 0.0] and ref_top1 == top1
    reference = np.array([[[0.0, 1.0, 0.0]], [[0.0, 1.0, 0.0]], [[0.0, 0.0, 1.0]]], np.float32)
    top1, ref_top1 = score("top1", task_metric("top1"), logits, reference, None)
    assert top1 == [1.0, 0.0, 1.0] and ref_top1 == [1.0, 1.0, 1.0]
    top5, _ = score("top5", task_metric("top5"), logits, reference, None)
    assert top5 == [1.0, 1.0, 1.0]  # three classes: all of them are in the top five


def test_iou_and_mse() -> None:
    scores = np.zeros((1, 1, 2, 2, 2), np.float32)  # sample, batch, class, h, w
    scores[0, 0, 1, 0, :] = 1.0  # predicts class 1 on the top row
    target = np.array([[[1, 0], [0, 0]]])  # class 1 at one pixel only
    (value,), _ = score("iou", task_metric("iou"), scores, scores, [target])
    # class 0: both {(1,0),(1,1)} / either {(0,1),(1,0),(1,1)} = 2/3; class 1: 1/2
    assert value == pytest.approx((2 / 3 + 1 / 2) / 2)
    out = np.array([[1.0, 2.0]], np.float32)
    (value,), _ = score("mse", task_metric("mse"), out, out, [np.array([0.0, 0.0])])
    assert value == pytest.approx(2.5)


def test_unknown_metric_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="unknown metric 'f1'; known: top1, top5, iou, mse"):
        task_metric("f1")


def test_goals_parse_and_judge() -> None:
    figures = {"a": {"cosine": 0.999, "snr_db": 40.0}, "b": {"cosine": 0.98, "snr_db": 20.0}}
    tasks = {"top1": {"model": 0.9, "reference": 0.92}}
    assert not check_goal(parse_goal("cosine>=0.99"), figures, tasks).passed  # worst output
    assert check_goal(parse_goal("cosine:a >= 0.99"), figures, tasks).passed
    assert check_goal(parse_goal("top1>=0.97*reference"), figures, tasks).passed
    assert not check_goal(parse_goal("top1>=0.99*reference"), figures, tasks).passed
    assert check_goal(parse_goal("top1>=90%"), figures, tasks).passed
    assert not check_goal(parse_goal("max-degradation=1%"), figures, tasks).passed
    assert check_goal(parse_goal("max-degradation=3%"), figures, tasks).passed
    mse = {"mse": {"model": 1.05, "reference": 1.0}}
    assert not check_goal(parse_goal("max-degradation=1%"), figures, mse).passed
    assert check_goal(parse_goal("max-degradation=10%"), figures, mse).passed
    result = check_goal(parse_goal("snr_db>30"), figures, tasks)
    assert [c["output"] for c in result.checks if not c["passed"]] == ["b"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("cosine", "cannot read goal"),
        ("top1>=abc", "is not a number"),
        ("cosine>=0.9*reference", "give a number"),
        ("max-degradation=150%", "between 0 and 100%"),
    ],
)
def test_bad_goals_say_how_to_write_one(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        parse_goal(text)


def _samples(folder: Path, count: int) -> Path:
    folder.mkdir()
    for i in range(count):
        np.savez(folder / f"s{i}.npz", x=np.full((1, 4), i, np.float32))
    return folder


def test_dataset_directory_and_labels(tmp_path: Path) -> None:
    folder = _samples(tmp_path / "ds", 3)
    (tmp_path / "labels.json").write_text(json.dumps({"s0.npz": 0, "s1.npz": 2, "s2.npz": 1}))
    dataset = load_dataset(folder, SPECS, tmp_path / "labels.json")
    assert dataset.names == ["s0.npz", "s1.npz", "s2.npz"] and not dataset.stacked
    assert [int(v) for v in dataset.labels or []] == [0, 2, 1]
    assert float(dataset.samples[2]["x"][0, 0]) == 2.0


def test_stacked_dataset(tmp_path: Path) -> None:
    np.savez(tmp_path / "all.npz", x=np.zeros((5, 2, 4), np.float32))
    np.savez(tmp_path / "labels.npz", np.arange(5))
    dataset = load_dataset(tmp_path / "all.npz", SPECS, tmp_path / "labels.npz")
    assert dataset.stacked and dataset.names == [f"#{i}" for i in range(5)]
    assert dataset.samples[0]["x"].shape == (2, 4)
    np.savez(tmp_path / "batch_first.npz", x=np.arange(24, dtype=np.float32).reshape(6, 4))
    split = load_dataset(tmp_path / "batch_first.npz", SPECS)  # as calibration data reads it
    assert len(split) == 6 and split.samples[1]["x"].shape == (1, 4)
    assert split.samples[1]["x"][0, 0] == 4.0


def test_the_layer_search_samples_outlive_a_rewrite_of_the_dataset(tmp_path: Path) -> None:
    from edgehub.ops.eval.measure import _read_first

    values = np.random.default_rng(0).standard_normal((64, 256, 4)).astype(np.float32)
    np.savez(tmp_path / "all.npz", x=values)  # 256 KiB a sample: pages of their own
    dataset = load_dataset(tmp_path / "all.npz", SPECS)
    _read_first(dataset, 2)
    np.savez(tmp_path / "all.npz", x=values[:1])  # rewritten in place, shorter
    assert np.array_equal(dataset.samples[1]["x"], values[1])  # no SIGBUS: read before


def test_bad_datasets_name_the_sample(tmp_path: Path) -> None:
    folder = _samples(tmp_path / "ds", 3)
    np.savez(folder / "s1.npz", x=np.zeros((1, 5), np.float32))
    with pytest.raises(InputDataError, match=r"sample s1.npz .*dim 1 must be 4"):
        load_dataset(folder, SPECS)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputDataError, match=r"holds no .npz samples"):
        load_dataset(tmp_path / "empty", SPECS)
    good = _samples(tmp_path / "good", 2)
    (tmp_path / "labels.json").write_text("[1, 2, 3]")
    with pytest.raises(InputDataError, match=r"hold 3 entries but dataset .* has 2 samples"):
        load_dataset(good, SPECS, tmp_path / "labels.json")
    (tmp_path / "named.json").write_text('{"s0.npz": 1}')
    with pytest.raises(InputDataError, match=r"no entry for dataset sample s1.npz"):
        load_dataset(good, SPECS, tmp_path / "named.json")
    (tmp_path / "text.json").write_text('["cat", "dog"]')
    with pytest.raises(InputDataError, match=r"label of sample s0.npz is not a number"):
        load_dataset(good, SPECS, tmp_path / "text.json")
    np.savez(tmp_path / "uneven.npz", x=np.zeros((3, 1, 4), np.float32), y=np.zeros((2, 1)))
    with pytest.raises(InputDataError, match="disagree on the number of samples"):
        load_dataset(tmp_path / "uneven.npz", SPECS)


def _chain(count: int) -> list[dict[str, object]]:
    nodes = []
    for i in range(count):
        nodes.append({"name": f"n{i}", "op": "Relu", "inputs": [f"t{i - 1}" if i else "x"],
                      "outputs": [f"t{i}"]})  # fmt: skip
    return nodes


def test_layer_bisection_finds_the_first_divergent_layer_in_few_runs() -> None:
    from edgehub.ops.eval.layers import LayerSearch, layer_rows, qdq_match

    count, bad = 100, 37
    reference = _chain(count)
    compiled = [n for n in _chain(count) if n["name"] != "n36"]  # n36 folded into n37
    rows = layer_rows(reference, qdq_match(compiled))
    marked: list[list[str]] = []

    def probe(marks: dict[str, str], bad: int = bad) -> tuple[dict[str, Any], dict[str, Any]]:
        """Stands in for the two models' runs: from layer ``bad`` on, 100 % error."""
        marked.append(list(marks))
        model = {}
        for name in marks:
            noise = 1.0 if int(name[1:]) >= bad else 0.01
            model[name] = np.ones((2, 1, 3)) * (1 + noise)
        return model, {ref: np.ones((2, 1, 3)) for ref in marks.values()}

    search = LayerSearch(rows, 0.2, probe)
    first = search.first_divergent()
    assert first is not None and first.node == "n37" and first.fused == ["n36"]
    assert search.runs == len(marked) <= int(np.ceil(np.log2(count))) + 1
    assert all(len(names) <= 2 for names in marked)  # a few tensors per run, never all
    assert first.growth == pytest.approx(1.0)  # its producer n36 was folded: nothing before
    report = search.to_dict(first, 2)
    assert report["fused_or_renamed"] == [{"node": "n36", "op": "Relu", "tensor": "t36"}]

    rows = layer_rows(reference, qdq_match(reference))
    calm = LayerSearch(rows, 0.2, lambda m: probe(m, bad=count))
    assert calm.first_divergent() is None and calm.runs == 1


def test_two_models_of_one_file_name_are_staged_apart() -> None:
    from edgehub.toolchains.batch import _prefixed

    files, fields = _prefixed(
        {"m.tflite": Path("/x/m.tflite"), "m.mapping.json": Path("/x/m.mapping.json")},
        {"model": "in/m.tflite", "mapping": "in/m.mapping.json", "graph": True},
        "1-",
    )
    assert files == {
        "1-m.tflite": Path("/x/m.tflite"),
        "1-m.mapping.json": Path("/x/m.mapping.json"),
    }
    assert fields == {"model": "in/1-m.tflite", "mapping": "in/1-m.mapping.json", "graph": True}


def test_files_that_are_not_arrays_and_labels_that_are_not_finite(tmp_path: Path) -> None:
    (tmp_path / "text.npz").write_text("not an archive")
    with pytest.raises(InputDataError, match=r"text.npz is not an .npz or .npy file"):
        load_dataset(tmp_path / "text.npz", SPECS)
    folder = _samples(tmp_path / "ds", 2)
    (folder / "s1.npz").write_text("broken")
    with pytest.raises(InputDataError, match=r"dataset sample s1.npz: .* is not an .npz"):
        load_dataset(folder, SPECS)
    good = _samples(tmp_path / "good", 2)
    (tmp_path / "nan.json").write_text("[1, NaN]")
    with pytest.raises(InputDataError, match=r"label of sample s1.npz is not finite"):
        load_dataset(good, SPECS, tmp_path / "nan.json")
    (tmp_path / "labels.txt").write_text("1\n2\n")
    with pytest.raises(InputDataError, match=r"labels: .*labels.txt is not an .npz or .npy"):
        load_dataset(good, SPECS, tmp_path / "labels.txt")


def test_the_layer_table_counts_hundreds_of_fused_nodes_instead_of_naming_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An exported detector's layer search leaves hundreds of Shape/Gather/Constant nodes
    without a counterpart: the table's note names the first few and counts the rest by op."""
    from edgehub.cli.eval_cmd import FUSED_SHOWN, _print_layers

    ops = ["Constant"] * 120 + ["Shape"] * 30 + ["Gather"] * 20 + ["Concat", "Div"]
    layers = {
        "layers": 200, "runs": 3, "samples": 4, "threshold": 0.2, "measured": [],
        "first_divergent": None,
        "fused_or_renamed": [{"node": f"/detect/n{i}", "op": op} for i, op in enumerate(ops)],
    }  # fmt: skip
    _print_layers(layers)
    (note,) = [line for line in capsys.readouterr().out.splitlines() if "fused or" in line]
    assert "172 nodes (Constant 120, Shape 30, Gather 20, Concat 1, Div 1)" in note
    assert f"/detect/n{FUSED_SHOWN - 1} (Constant); --json lists all" in note
    assert f"/detect/n{FUSED_SHOWN} " not in note and len(note) < 400

    layers["fused_or_renamed"] = layers["fused_or_renamed"][:2]
    _print_layers(layers)
    out = capsys.readouterr().out
    assert "(not compared): /detect/n0 (Constant), /detect/n1 (Constant)\n" in out
