"""The onnx package's backend node tests through `ONNXRuntimeInvoker` (local provider).

Every node test that bare onnxruntime passes in the pinned image must also pass through the
invoker, with the same tolerance (exact equality for string outputs, which travel as unicode
arrays in a pickle-free `.npz`).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from edgehub.core import HubContext
from edgehub.core.compile import ONNXRuntimeCompiledModel
from edgehub.core.invoke import ONNXRuntimeInvoker

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3000)]

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
HERE = Path(__file__).parent


def _tensors(folder: Path, prefix: str) -> list[np.ndarray]:
    paths = sorted(folder.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    arrays = []
    for path in paths:
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        arrays.append(numpy_helper.to_array(tensor))
    return arrays


def _bare_passes(ort_image: str, tmp_path: Path) -> list[str]:
    from edgehub.runners.docker import DockerCommandRunner

    with DockerCommandRunner(ort_image) as runner:
        runner.put(HERE / "node_tests_bare.py", PurePosixPath("/work/node_tests_bare.py"))
        runner.run(["python3", "/work/node_tests_bare.py", "/work/bare.json"], hide=True)
        runner.get(PurePosixPath("/work/bare.json"), tmp_path / "bare.json")
    passed: list[str] = json.loads((tmp_path / "bare.json").read_text())["passed"]
    return passed


def test_every_node_test_bare_onnxruntime_passes_also_passes_through_the_invoker(
    ort_image: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not DATA.is_dir():
        pytest.skip("needs onnx <= 1.22 (its wheel ships the backend node test data)")
    # one warm container and its resident agent serve every case, as for a user's many short
    # jobs (a container of its own per case made this the slowest test of CI by minutes)
    monkeypatch.setenv("EDGEHUB_KEEP_WARM", "30")
    bare = _bare_passes(ort_image, tmp_path)
    limit = int(os.environ.get("EDGEHUB_NODE_TEST_LIMIT", "0"))
    cases = bare[:limit] if limit else bare
    failures: dict[str, str] = {}
    runnable = [(case, _tensors(DATA / case / "test_data_set_0", "input")) for case in cases]

    with HubContext(project_name="node-tests", artifact_base_dir=tmp_path / "store") as ctx:
        invoker = ONNXRuntimeInvoker()

        def check(item: tuple[str, list[np.ndarray]]) -> None:
            case, inputs = item
            model_path = DATA / case / "model.onnx"
            model = onnx.load(str(model_path), load_external_data=False)
            initializers = {i.name for i in model.graph.initializer}
            names = [i.name for i in model.graph.input if i.name not in initializers]
            expected = _tensors(DATA / case / "test_data_set_0", "output")
            out_names = [o.name for o in model.graph.output]
            try:
                result = invoker.run(
                    ctx,
                    ONNXRuntimeCompiledModel.from_path(model_path),
                    dict(zip(names, inputs, strict=False)),
                )
                for name, want in zip(out_names, expected, strict=False):
                    got = result.output[name]
                    if want.dtype.kind in "OUS":
                        np.testing.assert_array_equal(got.astype(str), want.astype(str))
                    else:
                        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-7)
            except Exception as error:
                failures[case] = f"{type(error).__name__}: {str(error)[:200]}"

        with ThreadPoolExecutor(max_workers=3) as pool:
            list(pool.map(check, runnable))

    with capsys.disabled():  # the counts belong in the CI log
        print(
            f"\nonnx node tests: {len(bare)} pass with bare onnxruntime; {len(runnable)} run "
            f"through ONNXRuntimeInvoker: {len(runnable) - len(failures)} passed, "
            f"{len(failures)} failed"
        )
    assert not failures, dict(list(failures.items())[:10])
