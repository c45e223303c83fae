"""Eval datasets are user files held to the rules of MODEL and ``--input``, through the real
``hub exec eval onnxruntime`` (local provider, the ONNX Runtime image, a model built here).

A FIFO (as the dataset, among its samples, as the labels) is refused at once; an ``.npz``
whose compressed arrays declare gigabytes is refused from its archive directory with the hub
process staying small, and so is one whose ``.npy`` header declares more than its archive
member; a NaN or infinity in the samples is one line naming the file, array and index; NaN
outputs of a model on finite samples end the run FAILED in one line, never as a NULL in the
store; deep labels JSON is one line; a dataset cut short while the eval runs ends the run
FAILED saying so. Each: a non-zero exit, one ``hub: error:`` line, no traceback.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from edgehub.tracking import RunRecord, RunStore

onnx = pytest.importorskip("onnx", reason="the onnx package builds the test models")

HUB = str(Path(sys.executable).with_name("hub"))
FEATURES, CLASSES, SAMPLES = 16, 10, 8
BOMB_BYTES = 2 << 30  # what the bomb's one array unpacks to
RSS_CEILING = 400 << 20  # far below it: the hub process never unpacks the bomb
# runs the hub and reports its peak RSS: a fresh process, so only the hub's own children count
MEASURED = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:])\n"
    "print('maxrss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
    "file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def hub(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def measured_hub(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    """The hub's result and its peak resident memory in bytes."""
    result = subprocess.run(
        [sys.executable, "-c", MEASURED, HUB, *args], cwd=cwd, capture_output=True, text=True,
        timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip
    line = [x for x in result.stderr.splitlines() if x.startswith("maxrss_kib ")][-1]
    return result, int(line.split()[1]) * 1024


def eval_args(dataset: str, *extra: str) -> list[str]:
    return ["exec", "eval", "onnxruntime", "clf.onnx", "--dataset", dataset,
            "--set", "quantization=none", *extra]  # fmt: skip


def runs(project: Path) -> list[RunRecord]:
    return RunStore(project / ".hub").list_runs(limit=None)


def refused(result: subprocess.CompletedProcess[str], needle: str, code: int = 2) -> str:
    """The one error line of a refusal that holds ``needle``."""
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(errors) == 1 and needle in errors[0], result.stderr
    assert "internal error" not in errors[0] and "check the file system" not in errors[0]
    return errors[0]


def _model(path: Path, op: str = "classifier") -> None:
    """A classifier x @ W + b, or (``op`` "sqrt") one whose output is the square root of x."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEATURES])
    if op == "sqrt":
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", FEATURES])
        graph = helper.make_graph([helper.make_node("Sqrt", ["x"], ["y"])], "sqrt", [x], [y])
    else:
        weights = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
        bias = rng.standard_normal(CLASSES).astype(np.float32)
        graph = helper.make_graph(
            [
                helper.make_node("MatMul", ["x", "W"], ["h"]),
                helper.make_node("Add", ["h", "b"], ["logits"]),
            ],
            "classifier",
            [x],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])],
            [numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
        )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "dataset-trust"\n')
    _model(folder / "clf.onnx")
    rng = np.random.default_rng(5)
    np.savez(folder / "good.npz", x=rng.standard_normal((SAMPLES, 1, FEATURES)).astype("f4"))
    return folder


def _bomb(path: Path, declared: int, written: int) -> None:
    """A deflated .npz whose one float32 array's header declares ``declared`` bytes of data;
    ``written`` bytes of zeros follow it (both may differ: a header that lies)."""
    shape = (declared // 4 // FEATURES, 1, FEATURES)
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("x.npy", "w", force_zip64=True) as member,
    ):
        np.lib.format.write_array_header_1_0(member, header)
        block = bytes(16 << 20)
        for start in range(0, written, len(block)):
            member.write(block[: written - start])


def test_fifo_dataset_samples_and_labels_are_refused_at_once(project: Path) -> None:
    os.mkfifo(project / "fifo.npz")
    result = hub(*eval_args("fifo.npz"), cwd=project, timeout=60)  # a hang fails the test
    refused(result, "dataset fifo.npz is a FIFO (named pipe), not a regular file")
    (project / "ds").mkdir()
    np.savez(project / "ds" / "000.npz", x=np.zeros((1, FEATURES), np.float32))
    os.mkfifo(project / "ds" / "001.npz")
    result = hub(*eval_args("ds"), cwd=project, timeout=60)
    refused(result, "001.npz is a FIFO (named pipe), not a regular file")
    os.mkfifo(project / "labels.json")
    result = hub(*eval_args("good.npz", "--labels", "labels.json"), cwd=project, timeout=60)
    refused(result, "labels labels.json is a FIFO (named pipe), not a regular file")
    result = hub(*eval_args("/dev/zero"), cwd=project, timeout=60)
    refused(result, "dataset /dev/zero is a character device, not a regular file")
    assert runs(project) == []


@pytest.mark.docker
@pytest.mark.usefixtures("ort_image")
def test_npz_bomb_is_refused_before_it_is_unpacked(project: Path) -> None:
    _bomb(project / "bomb.npz", BOMB_BYTES, BOMB_BYTES)
    assert (project / "bomb.npz").stat().st_size < 4 << 20  # a few MB on disk
    result, peak = measured_hub(*eval_args("bomb.npz"), cwd=project)
    line = refused(result, "its compressed arrays unpack to 2 GiB, over the limit of 1 GiB")
    assert "EDGEHUB_DATASET_MAX_UNPACKED" in line
    assert peak < RSS_CEILING, f"hub peaked at {peak >> 20} MiB"
    # a directory of samples is counted as a whole: 64 MiB each, over a limit of 100 MiB
    (project / "ds").mkdir()
    for index in range(2):
        _bomb(project / "ds" / f"{index}.npz", 64 << 20, 64 << 20)
    result = hub(*eval_args("ds"), cwd=project, env={"EDGEHUB_DATASET_MAX_UNPACKED": "100M"})
    refused(result, "dataset ds: its compressed arrays unpack to 128 MiB, over the limit of 100")
    assert runs(project) == []


@pytest.mark.docker
@pytest.mark.usefixtures("ort_image")
def test_npz_header_declaring_more_than_its_member_is_refused_unread(project: Path) -> None:
    # the limit raised past the bomb: the header's 2 GiB against the member's 1 MiB decides
    _bomb(project / "liar.npz", BOMB_BYTES, 1 << 20)
    big = {"EDGEHUB_DATASET_MAX_UNPACKED": "64G"}
    result, peak = measured_hub(*eval_args("liar.npz"), cwd=project, env=big)
    refused(result, "its header declares 2147483648 bytes of data but the archive holds")
    assert peak < RSS_CEILING, f"hub peaked at {peak >> 20} MiB"
    # and a member that unpacks to more than the archive says stops at what it says
    npy = io.BytesIO()
    np.save(npy, np.zeros((16384, 1, FEATURES), np.float32))  # 1 MiB
    with zipfile.ZipFile(project / "long.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", npy.getvalue())
    raw = bytearray((project / "long.npz").read_bytes())
    central = raw.rindex(b"PK\x01\x02") + 24  # the central directory's uncompressed size
    declared = int.from_bytes(raw[central : central + 4], "little")
    assert declared == len(npy.getvalue())
    raw[central : central + 4] = (declared - 64).to_bytes(4, "little")
    (project / "long.npz").write_bytes(bytes(raw))
    result = hub(*eval_args("long.npz"), cwd=project, env=big)
    refused(result, "its header declares 1048576 bytes of data but the archive holds 1048512")
    assert runs(project) == []


@pytest.mark.docker
@pytest.mark.usefixtures("ort_image")
def test_nan_or_infinity_in_the_samples_is_one_line_naming_it(project: Path) -> None:
    data = np.random.default_rng(1).standard_normal((SAMPLES, 1, FEATURES)).astype(np.float32)
    data[3, 0, 5] = np.nan
    np.savez(project / "nan.npz", x=data)
    result = hub(*eval_args("nan.npz"), cwd=project)
    line = refused(result, "dataset nan.npz: array 'x' holds NaN at index [3, 0, 5] (sample #3)")
    assert "NOT NULL" not in line
    (project / "ds").mkdir()
    for index in range(3):
        sample = np.ones((1, FEATURES), np.float32)
        if index == 2:
            sample[0, 7] = -np.inf
        np.savez_compressed(project / "ds" / f"{index:03d}.npz", x=sample)
    result = hub(*eval_args("ds"), cwd=project)
    refused(result, "002.npz: array 'x' holds an infinity at index [0, 7]")
    assert runs(project) == []


@pytest.mark.docker
@pytest.mark.usefixtures("ort_image")
def test_nan_outputs_of_finite_samples_fail_the_run_not_the_store(project: Path) -> None:
    _model(project / "sqrt.onnx", "sqrt")
    data = np.abs(np.random.default_rng(2).standard_normal((SAMPLES, 1, FEATURES)))
    data[4, 0, 2] = -1.0  # finite, but its square root is not
    np.savez(project / "neg.npz", x=data.astype(np.float32))
    args = ["exec", "eval", "onnxruntime", "sqrt.onnx", "--dataset", "neg.npz",
            "--set", "quantization=none"]  # fmt: skip
    result = hub(*args, cwd=project)
    refused(result, "output 'y' holds NaN for sample #4 (index [0, 2])")
    (run,) = [r for r in runs(project) if r.run_type == "EVAL"]
    assert run.status == "FAILED" and "holds NaN for sample #4" in str(run.error)
    shown = hub("runs", "show", run.run_id, cwd=project)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


@pytest.mark.docker
@pytest.mark.usefixtures("ort_image")
def test_deep_or_ragged_labels_json_is_one_line(project: Path) -> None:
    (project / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    result = hub(*eval_args("good.npz", "--labels", "deep.json", "--metric", "top1"),
                 cwd=project)  # fmt: skip
    refused(result, "labels deep.json nest deeper than")
    (project / "nested.json").write_text(json.dumps([_nest(60)] * SAMPLES))
    result = hub(*eval_args("good.npz", "--labels", "nested.json"), cwd=project)
    refused(result, "labels nested.json nest deeper than")
    (project / "ragged.json").write_text(json.dumps([[[1, 2], [3]]] * SAMPLES))
    result = hub(*eval_args("good.npz", "--labels", "ragged.json"), cwd=project)
    refused(result, "labels ragged.json: the label of sample #0 is not finite numbers")
    assert runs(project) == []


def _nest(depth: int) -> list[object]:
    value: list[object] = [0]
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.docker
@pytest.mark.usefixtures("ort_image")
def test_dataset_cut_short_during_the_eval_fails_the_run_saying_so(project: Path) -> None:
    rows = 200_000
    data = np.random.default_rng(4).standard_normal((rows, 1, FEATURES)).astype(np.float32)
    np.savez(project / "big.npz", x=data)
    process = subprocess.Popen(
        [HUB, *eval_args("big.npz")], cwd=project, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    lines = []
    assert process.stderr is not None
    for line in process.stderr:  # the log
        lines.append(line)
        if "samples checked" in line:  # checked; nothing compiled or run yet
            os.truncate(project / "big.npz", 100_000)
    code = process.wait(timeout=300)
    reader.join()
    result = subprocess.CompletedProcess(process.args, code, out[0], "".join(lines))
    refused(result, "dataset big.npz changed while the eval ran")
    (run,) = [r for r in runs(project) if r.run_type == "EVAL"]
    assert run.status == "FAILED" and "changed while the eval ran" in str(run.error)
