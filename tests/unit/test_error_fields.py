"""An `ops` error about one option names its field; each front end words it (issue 37).

The operation writes ``{field}`` where its message names the option; ``str()`` gives the
operation's own name (``pin_cpus``), the real ``hub`` its flag (``--pin-cpus``, ``--input``).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

from edgehub.errors import UsageError
from edgehub.ops.pinning import check_cpu_list

HUB = str(Path(sys.executable).with_name("hub"))


def test_the_field_is_worded_by_the_front_end() -> None:
    error = UsageError("{field} 3-1: the range runs backwards; fix {field}", field="pin_cpus")
    assert str(error) == "pin_cpus 3-1: the range runs backwards; fix pin_cpus"
    assert error.worded(lambda field: f"<{field}>").startswith("<pin_cpus> 3-1")
    copy = pickle.loads(pickle.dumps(error))  # crosses processes (sweeps, the TUI's workers)
    assert copy.field == "pin_cpus" and str(copy) == str(error)
    plain = UsageError("no {field} here")
    assert plain.field is None and str(plain) == "no {field} here"


def test_ops_raise_about_the_field_not_the_flag() -> None:
    try:
        check_cpu_list("3-1")
    except UsageError as error:
        assert error.field == "pin_cpus" and "--" not in str(error)
    else:
        raise AssertionError("3-1 was accepted")


def test_hub_words_the_field_as_its_flag(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "fields"\n')
    (tmp_path / "a.onnx").write_bytes(b"")
    done = subprocess.run(
        [HUB, "exec", "ab", "onnxruntime", "a.onnx", "a.onnx", "--rounds", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "hub: error: --rounds 2 is too few" in done.stderr
    assert "Traceback" not in done.stderr
