"""Terminal escapes from outside, shown as visible escapes by the real `hub` (never a window
title, a screen clear or an OSC 52 clipboard write):

- a device whose tool prints them on stderr: `hub exec`'s live log, against the SSH test device
  (tests/ssh_device). The device's ``trtexec`` is a script of this test's that prints the
  escapes on stderr and then runs the device's trtexec stand-in, so a real compile streams them
  over SSH as it runs;
- a real compile in the ONNX Runtime image whose recorded name and error were then given
  escapes (as an imported bundle can carry): `hub runs show`, `runs list` and a successful
  `hub runs rerun`. The name and error are set through the store's own transaction (the test
  hook: a run made here cannot be given such a name otherwise).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edgehub.ops.project import open_project
from ssh_device.device import SSHDevice

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
NOISY = "/home/edge/noisy-trtexec"
# printf's octal escapes: ESC ] 0;title BEL, ESC [2J, an OSC 52 clipboard write, C1 CSI (0x9b)
SCRIPT = (
    "#!/bin/sh\n"
    "{ printf 'noisy \\033]0;pwned\\007 \\033[2J '\n"
    "  printf '\\033]52;c;cm0gLXJmIH4K\\007 \\302\\23331m end\\n'; } >&2\n"
    'exec trtexec "$@"\n'
)


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run([HUB, *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip


@pytest.mark.ssh
def test_live_log_of_a_device_shows_escapes(device: SSHDevice, tmp_path: Path) -> None:
    device.exec("sh", "-c", f"cat > {NOISY} && chmod 0755 {NOISY}", stdin=SCRIPT)
    known_hosts = tmp_path / "kh" / "known_hosts"
    known_hosts.parent.mkdir()
    known_hosts.write_text("")
    project = tmp_path / "proj"
    (project / "home").mkdir(parents=True)
    (project / "hub.toml").write_text(
        '[project]\nname = "escapes"\n\n'
        '[devices.board]\nprovider = "trtexec"\nspec = "SSH test device"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\nknown_hosts = "{known_hosts}"\n\n'
        f'[devices.board.trtexec]\npath = "{NOISY}"\n'
    )
    shutil.copy(MODEL, project / "model.onnx")
    trusted = hub("devices", "trust", "board", "--yes", cwd=project)
    assert trusted.returncode == 0, trusted.stderr

    done = hub("exec", "compile", "tensorrt", "model.onnx", "--device", "board", cwd=project)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "noisy" in line]
    assert lines, done.stderr
    assert lines[0] == (
        "  | noisy \\x1b]0;pwned\\x07 \\x1b[2J \\x1b]52;c;cm0gLXJmIH4K\\x07 \\x9b31m end"
    )
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in done.stderr and raw not in done.stdout


HOSTILE = "tiny\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4K\x07\x9b31m"


@pytest.mark.docker
def test_show_list_and_rerun_of_a_run_named_with_escapes(ort_image: str, tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "escapes"\n')
    shutil.copy(MODEL, tmp_path / "model.onnx")
    (tmp_path / "home").mkdir()
    done = hub("exec", "compile", "onnxruntime", "model.onnx", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    store = open_project(tmp_path / "hub.toml").store()
    try:
        with store.transaction("give the run a hostile name") as conn:
            conn.execute("UPDATE runs SET name=?, error=? WHERE id=?", (HOSTILE, HOSTILE, run_id))
    finally:
        store.close()

    for args in (("runs", "show", run_id[:8]), ("runs", "list"), ("runs", "rerun", run_id[:8])):
        shown = hub(*args, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        output = shown.stdout + shown.stderr
        for raw in ("\x1b", "\x07", "\x9b"):
            assert raw not in output, (args, output)
        assert "tiny\\x1b]0;pwned" in output, (args, output)
    assert f"rerun of {run_id[:8]} (COMPILE tiny\\x1b]0;pwned\\x07\\x1b[2J" in shown.stdout
