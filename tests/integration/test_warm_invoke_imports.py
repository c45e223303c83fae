"""What a warm `hub exec invoke` loads on the host (issue 39): through the real CLI and
Docker, the modules only an error, a comparison or a deletion needs stay unloaded, and the run
records what it did before (host, Python version, ids of the same form)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from edgehub.ids import random_hex, uuid4_hex

REPO = Path(__file__).resolve().parents[2]
# loaded only for a misspelt word (difflib), a random name (uuid, which loads platform), or a
# `hub runs compare` / `hub runs delete` (the store's reads and deletions)
NOT_ON_THE_WARM_PATH = [
    "difflib",
    "uuid",
    "platform",
    "edgehub.tracking.compare",
    "edgehub.tracking.deletion",
]


def _hub(
    project: Path, *args: str, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``hub ARGS`` in ``project`` with warm containers (``python FLAGS -m`` with flags)."""
    hub = [sys.executable, *flags, "-m", "edgehub.cli.main"]
    env = dict(os.environ, EDGEHUB_KEEP_WARM="60")
    return subprocess.run(hub + list(args), cwd=project, env=env, capture_output=True, text=True)


@pytest.mark.docker
def test_a_warm_invoke_loads_no_module_it_does_not_use(tmp_path: Path, ort_image: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hub.toml").write_text('[project]\nname = "warm-imports"\n')
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", project / "model.onnx")
    assert _hub(project, "-q", "exec", "invoke", "onnxruntime", "model.onnx").returncode == 0
    run = _hub(
        project, "-q", "exec", "invoke", "onnxruntime", "model.onnx",
        flags=("-X", "importtime"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
    assert "edgehub.tracking.store" in imported  # the record of the import times is read
    assert [m for m in NOT_ON_THE_WARM_PATH if m in imported] == []
    shown = _hub(project, "runs", "show", "latest", "--json")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    host = f"{platform.node()} ({platform.system()} {platform.machine()}, {os.cpu_count()} CPUs)"
    assert record["environment"]["host"] == host
    assert record["environment"]["python"] == platform.python_version()
    assert uuid.UUID(hex=record["run_id"]).version == 4
    assert uuid.UUID(hex=record["run_id"]).hex == record["run_id"]


def test_ids_have_the_form_uuid_gave_them() -> None:
    ids = {uuid4_hex() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    for digits in (8, 10, 11):
        name = random_hex(digits)
        assert len(name) == digits and int(name, 16) >= 0
