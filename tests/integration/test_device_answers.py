"""What a device sends back and how its commands end, through the real `hub` entry point on
the SSH test device (tests/ssh_device: real sshd, real agent) and in the ONNX Runtime image:

- an output ``.npz`` that unpacks past `~edgehub.limits.FetchLimits` (a zip bomb: small on
  the wire, huge unpacked) is refused before anything reads it, in one line naming the device
  and the variable that raises the limit. On the SSH device its Python is a wrapper that runs
  the real agent, then swaps the invoke's output for a crafted bomb: a hostile board. In the
  container, a model whose output is one value repeated 8 Mi times (compressed by the agent
  to a few KiB) meets a lowered limit.
- an agent the board's kernel kills (exit 137: the OOM killer's SIGKILL; here the board's Python
  kills itself with SIGKILL) is named as killed, with what to check, in one line; so is a
  device tool (trtexec) and any command the SSH runner runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
DEVICE_PYTHON = "/opt/device/bin/python3"
HOSTILE_PYTHON = "/home/edge/hostile-python"
BOMB_ELEMENTS = 16 << 20  # float32: 64 MiB unpacked, about 64 KiB deflated

# writes a one-array .npz whose array is BOMB_ELEMENTS float32 zeros, deflated, by hand
BOMB_WRITER = f"""
import struct, sys, zipfile
header = "{{'descr': '<f4', 'fortran_order': False, 'shape': ({BOMB_ELEMENTS},), }}"
header += " " * (-(len(header) + 11) % 64) + "\\n"
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
    with archive.open("output.npy", "w", force_zip64=True) as member:
        member.write(b"\\x93NUMPY\\x01\\x00" + struct.pack("<H", len(header)) + header.encode())
        zeros = bytes(1 << 20)
        for _ in range({BOMB_ELEMENTS * 4} >> 20):
            member.write(zeros)
"""
WRAPPER = f"""#!/bin/sh
{DEVICE_PYTHON} "$@"
status=$?
if [ -f out/output.npz ]; then {DEVICE_PYTHON} /home/edge/bomb.py out/output.npz; fi
exit $status
"""


def _project(tmp_path: Path, device: SSHDevice, python: str) -> Path:
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "answers"\n\n[devices.board]\nprovider = "ssh"\n'
        f'[devices.board.agent]\npython = "{python}"\nresident = false\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def _hub(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HOME": str(project / "home"), **env}
    full.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(
        [HUB, *args], cwd=project, capture_output=True, text=True, env=full, timeout=300
    )


def _error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode not in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("hub: error:")]
    return line


@pytest.mark.ssh
def test_a_zip_bomb_output_from_an_ssh_board_is_refused_naming_board_and_limit(
    device: SSHDevice, tmp_path: Path
) -> None:
    device.exec("sh", "-c", "cat > /home/edge/bomb.py", stdin=BOMB_WRITER)
    device.exec("sh", "-c", f"cat > {HOSTILE_PYTHON}; chmod +x {HOSTILE_PYTHON}", stdin=WRAPPER)
    project = _project(tmp_path, device, HOSTILE_PYTHON)
    args = ("exec", "invoke", "onnxruntime", "model.onnx", "--device", "board")
    done = _hub(project, *args, EDGEHUB_FETCH_MAX_MEMBER_BYTES="16M")
    line = _error_line(done)
    assert "out/output.npz from device 'board' (64 MiB unpacked)" in line, line
    assert "over the limit of 16 MiB a file; raise EDGEHUB_FETCH_MAX_MEMBER_BYTES" in line
    done = _hub(project, *args, EDGEHUB_FETCH_MAX_BYTES="32M")  # the total, its own variable
    assert "raise EDGEHUB_FETCH_MAX_BYTES to accept more" in _error_line(done)
    # the same board within the limits: the bomb is read (its 64 MiB of zeros) and shown
    done = _hub(project, *args)
    assert done.returncode == 0, done.stderr
    assert "float32" in done.stdout and str(BOMB_ELEMENTS) in done.stdout, done.stdout


def _repeated_value_model(path: Path) -> None:
    """y = x (one float) expanded to 8 Mi values: 32 MiB unpacked, tiny deflated."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = numpy_helper.from_array(__import__("numpy").array([8 << 20], "int64"), "shape")
    graph = helper.make_graph(
        [helper.make_node("Expand", ["x", "shape"], ["y"])], "repeat",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8 << 20])],
        initializer=[shape],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.docker
def test_an_output_unpacking_past_the_limit_in_the_container_is_refused(
    tmp_path: Path, ort_image: str
) -> None:
    project = tmp_path / "proj"
    (project / "home").mkdir(parents=True)
    (project / "hub.toml").write_text('[project]\nname = "answers"\n')
    _repeated_value_model(project / "repeat.onnx")
    args = ("exec", "invoke", "onnxruntime", "repeat.onnx")
    line = _error_line(_hub(project, *args, EDGEHUB_FETCH_MAX_MEMBER_BYTES="8M"))
    assert "array 'y' of out/output.npz from device 'local' (32 MiB unpacked)" in line, line
    assert "raise EDGEHUB_FETCH_MAX_MEMBER_BYTES" in line


@pytest.mark.ssh
def test_an_agent_killed_on_the_board_is_named_killed_with_what_to_check(
    device: SSHDevice, tmp_path: Path
) -> None:
    killer = "/home/edge/killed-python"
    script = (
        '#!/bin/sh\ncase "$*" in *ort.invoke*) '
        'exec /opt/device/bin/python3 -c "import os; os.kill(os.getpid(), 9)";; esac\n'
        f'exec {DEVICE_PYTHON} "$@"\n'
    )
    device.exec("sh", "-c", f"cat > {killer}; chmod +x {killer}", stdin=script)
    project = _project(tmp_path, device, killer)
    done = _hub(project, "exec", "invoke", "onnxruntime", "model.onnx", "--device", "board")
    line = _error_line(done)
    assert (
        "ort.invoke on device 'board' was killed (exit 137): out of memory on the device or "
        "SIGKILL — check free memory; last output: "
    ) in line, line
    assert "Killed" in line  # the device shell's own word, as the last output


@pytest.mark.ssh
def test_a_tool_or_command_killed_on_the_board_is_named_killed(
    device: SSHDevice, tmp_path: Path
) -> None:
    from edgehub.core.context import HubContext
    from edgehub.core.device import Device
    from edgehub.core.device.configs import TrtexecConfig
    from edgehub.errors import CommandError, ToolchainError
    from edgehub.runners.ssh import SSHCommandRunner
    from edgehub.toolchains.tensorrt import TensorRTCompiler

    note = "was killed (exit 137): out of memory on the device or SIGKILL — check free memory"
    with SSHCommandRunner(device.config()) as runner, pytest.raises(CommandError) as raised:
        runner.run(["sh", "-c", "kill -9 $$"], hide=True)
    assert str(raised.value).startswith(f"command 'sh' {note}; last output: "), raised.value
    killer = "/home/edge/killed-trtexec"
    device.exec("sh", "-c", f"printf '#!/bin/sh\\nkill -9 $$\\n' > {killer}; chmod +x {killer}")
    board = Device(
        name="jetson",
        runner=SSHCommandRunner(device.config()),
        provider_type="trtexec",
        provider_config=TrtexecConfig(trtexec_path=killer),
    )
    with (
        HubContext(artifact_base_dir=tmp_path / "store", devices=[board]) as ctx,
        pytest.raises(ToolchainError) as failed,
    ):
        TensorRTCompiler(precision="fp16").run(ctx, MODEL)
    assert f"trtexec on device 'jetson' {note}; last output: " in str(failed.value), failed.value
