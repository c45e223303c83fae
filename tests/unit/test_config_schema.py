"""`hub config schema` through the real entry point: the JSON Schema it prints is valid draft
2020-12, accepts the repository's hub.toml and the documented examples, and refuses what the
hub.toml checker refuses (a wrong type, an unknown key, a table under the wrong provider...),
checked with the `jsonschema` validator library (hub.toml read as TOML, then as JSON data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from edgehub.config.check import build_config
from edgehub.config.load import parse_toml
from edgehub.config.schema import SchemaError

HUB = str(Path(sys.executable).with_name("hub"))
REPO = Path(__file__).resolve().parents[2]


def _hub(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HUB, *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> jsonschema.Draft202012Validator:
    result = _hub("config", "schema", cwd=tmp_path_factory.mktemp("schema"))
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _checker_accepts(data: dict[str, Any], root: Path) -> bool:
    try:
        build_config(data, path=None, root=root)
    except SchemaError:
        return False
    return True


def test_the_repository_hub_toml_is_valid(validator: Any, tmp_path: Path) -> None:
    data = parse_toml((REPO / "hub.toml").read_text(encoding="utf-8"))
    assert list(validator.iter_errors(data)) == []
    assert _checker_accepts(data, tmp_path)


FULL = """
[project]
name = "p"
store = ".hub"
[images]
base = "edgehub-base:bookworm"
onnxruntime = "edgehub-onnxruntime:custom"
[devices.local]
[devices.local.docker]
cpus = 2
memory = "4G"
keep_warm = 600
[devices.rpi]
provider = "embedl_onnxruntime"
spec = "Raspberry Pi 5"
[devices.rpi.ssh]
host = "192.168.1.20"
user = "pi"
port = 22
key = "~/.ssh/id_ed25519"
keepalive = 0
jump_host = "me@bastion:22"
[devices.rpi.embedl_onnxruntime]
path = "/home/pi/venv/bin/embedl-onnxruntime"
cli_args = ["--intra-op-threads", "4"]
[devices.rpi.overrides.ONNXRuntimeProfiler.embedl_onnxruntime]
cli_args = ["--exec-providers", "CPUExecutionProvider"]
[devices.rpi.overrides."mypkg.components.MyCompiler".embedl_onnxruntime]
path = "other"
[devices.jetson]
provider = "trtexec"
[devices.jetson.ssh]
host = "jetson.local"
user = "nvidia"
password_env = "JETSON_PASSWORD"
[devices.jetson.trtexec]
cli_args = ["--fp16"]
[devices.jetson.labgrid]
coordinator = "lab:20408"
tags = ["board=orin"]
[devices.s24]
provider = "qai_hub"
spec = "Samsung Galaxy S24"
[devices.npu-board]
provider = "my_npu_backend"
[devices.npu-board.ssh]
host = "npu-board.local"
user = "root"
[devices.bare]
"""


def test_the_documented_examples_are_valid(validator: Any, tmp_path: Path) -> None:
    data = parse_toml(FULL)
    assert _checker_accepts(data, tmp_path)
    assert [error.message for error in validator.iter_errors(data)] == []


BAD = {
    "port-as-string": '[devices.d.ssh]\nhost = "h"\nuser = "u"\nport = "22"',
    "port-out-of-range": '[devices.d.ssh]\nhost = "h"\nuser = "u"\nport = 70000',
    "ssh-without-user": '[devices.d.ssh]\nhost = "h"',
    "zero-connect-timeout": '[devices.d.ssh]\nhost = "h"\nuser = "u"\nconnect_timeout = 0',
    "keepalive-count-0": '[devices.d.ssh]\nhost = "h"\nuser = "u"\nkeepalive_count = 0',
    "password-in-file": '[devices.d.ssh]\nhost = "h"\nuser = "u"\npassword = "hunter2"',
    "bad-env-name": '[devices.d.ssh]\nhost = "h"\nuser = "u"\npassword_env = "1-X"',
    "unknown-device-key": '[devices.d]\nprovider = "trtexec"\nsssh = {}',
    "unknown-top-table": '[projekt]\nname = "p"',
    "unknown-project-key": '[project]\nname = "p"\nstor = ".hub"',
    "unknown-image": '[images]\nnot_a_runtime = "x"',
    "blank-provider": '[devices.d]\nprovider = " "',
    "bad-device-name": '[devices."my board"]\nprovider = "local"',
    "settings-of-another-provider": (
        '[devices.d]\nprovider = "trtexec"\n[devices.d.docker]\ncpus = 1'
    ),
    "settings-without-provider": "[devices.d.docker]\ncpus = 1",
    "ssh-on-local": '[devices.local.ssh]\nhost = "h"\nuser = "u"',
    "cloud-without-spec": '[devices.d]\nprovider = "qai_hub"',
    "labgrid-on-cloud": '[devices.d]\nprovider = "qai_hub"\nspec = "S24"\n[devices.d.labgrid]',
    "memory-format": '[devices.local.docker]\nmemory = "4 gigs"',
    "cpus-zero": "[devices.local.docker]\ncpus = 0",
    "cpus-as-bool": "[devices.local.docker]\ncpus = true",
    "cli-args-as-string": (
        '[devices.d]\nprovider = "trtexec"\n[devices.d.trtexec]\ncli_args = "--fp16"'
    ),
    "unknown-settings-key": '[devices.d]\nprovider = "trtexec"\n[devices.d.trtexec]\npth = "x"',
    "unknown-component": (
        '[devices.d]\nprovider = "trtexec"\n'
        '[devices.d.overrides.TensorRTProfilr.trtexec]\npath = "x"'
    ),
    "override-of-another-provider": (
        '[devices.d]\nprovider = "trtexec"\n'
        '[devices.d.overrides.TensorRTProfiler.embedl_onnxruntime]\npath = "x"'
    ),
    "empty-override": '[devices.d]\nprovider = "trtexec"\n[devices.d.overrides.TensorRTProfiler]',
    "labgrid-tags-type": '[devices.d.labgrid]\ntags = "board=rpi"',
}


@pytest.mark.parametrize("text", list(BAD.values()), ids=list(BAD))
def test_what_the_checker_refuses_the_schema_refuses(
    validator: Any, text: str, tmp_path: Path
) -> None:
    data = parse_toml(text)
    assert not _checker_accepts(data, tmp_path)  # the case is a real error of hub.toml
    assert list(validator.iter_errors(data)), f"the schema accepts {text!r}"


def test_schema_written_to_a_file_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "hub.schema.json"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o600)
    result = _hub("config", "schema", "-o", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(target.read_text(encoding="utf-8"))["title"] == "hub.toml"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in out.iterdir()) == ["hub.schema.json"]  # no temporary left


@pytest.mark.parametrize(
    "where", ["missing/dir/s.json", ".", "pipe"], ids=["missing-dir", "a-directory", "a-fifo"]
)
def test_unwritable_output_is_one_line_exit_2(where: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = _hub("config", "schema", "-o", where, cwd=tmp_path)
    assert (tmp_path / "pipe").is_fifo()  # a device or pipe is never replaced by a file
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("hub: error:") and result.stdout == ""


def test_a_full_stdout_is_an_error_not_a_silent_success(tmp_path: Path) -> None:
    if not Path("/dev/full").is_char_device():
        pytest.skip("no /dev/full (a device whose writes fail with 'no space left') here")
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [HUB, "config", "schema"], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 3
    assert result.stderr.strip() == (
        "hub: error: cannot write the schema to stdout: No space left on device"
    )
