"""Dependency rules, checked in a fresh interpreter (`sys.modules`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = [
    "docker",
    "paramiko",
    "textual",
    "rich",
    "qai_hub",
    "botocore",
    "onnxruntime",
    "onnx",
    "tensorflow",
    "mlflow",
]


def _loaded(statement: str) -> list[str]:
    code = (
        f"{statement}\nimport sys, json\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


@pytest.mark.parametrize(
    "statement",
    [
        "import edgehub.core",
        "import edgehub.core.component, edgehub.core.device",
        "import edgehub.core.compile, edgehub.core.profile, edgehub.core.invoke",
        "import edgehub.tracking",
        "import edgehub.config",
        "import edgehub.ops.execute, edgehub.ops.doctor, edgehub.ops.images, edgehub.ops.devices",
        "import edgehub.ops.rerun, edgehub.ops.compile_cache, edgehub.ops.mlflow_export",
        "import edgehub.cli.main; edgehub.cli.main.build_parser()",
    ],
)
def test_core_loads_no_heavy_module(statement: str) -> None:
    assert _loaded(statement) == []
