"""A hostile SSH device cannot exhaust the host: against the SSH test device (tests/ssh_device:
real sshd, real tar), files coming back are streamed to disk with their holes, capped in size,
entries and depth; floods of output keep the host's memory and the run log bounded; bad
results are refused in one line. The end-to-end cases run the real ``hub`` with the ``ssh``
provider whose device "Python" is a script playing a faulty agent (``HOSTILE``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from edgehub.errors import DeviceOutputError
from edgehub.runners.protocol import Exchange
from edgehub.runners.ssh import SSHCommandRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice

pytestmark = pytest.mark.ssh

MiB = 1 << 20
GiB = 1 << 30
REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
LOG_CAP = 16 * MiB
LINE = "stderr of a flooding device, the same line again and again until 200 MB are sent"

# The device's "Python" for the ssh provider: called as `hostile.sh AGENT COMMAND --request
# request.json --result out/result.json` in the staged folder; ~/hostile-mode says what to do.
HOSTILE = f"""#!/bin/sh
[ "$2" = relay ] && exec python3 "$HOME/relay.py"
mode=$(cat "$HOME/hostile-mode")
mkdir -p out
fail='{{"ok": false, "error": {{"kind": "AgentError", "message": "failed on purpose"}}}}'
case "$mode" in
flood)
    truncate -s 1G out/sparse.bin
    yes '{LINE}' | head -c 200000000 >&2
    echo "$fail" > out/result.json ;;
sparse5g)
    truncate -s 5G out/sparse.bin
    echo "$fail" > out/result.json ;;
nonl)
    head -c 400000000 /dev/zero | tr '\\0' x >&2
    echo "$fail" > out/result.json ;;
deep)
    python3 -c 'import sys; sys.stdout.write("[" * 100000 + "]" * 100000)' > out/result.json ;;
huge)
    python3 -c 'import json; print(json.dumps({{"ok": True, "x": "y" * (20 << 20)}}))' \\
        > out/result.json ;;
missing)
    echo '{{"ok": true, "params": {{}}, "metrics": {{}}, "data": {{}}}}' > out/result.json ;;
many)
    mkdir out/many && (cd out/many && seq 1 500 | xargs touch)
    echo "$fail" > out/result.json ;;
esac
"""

# A faulty resident agent's relay (``[devices.X.agent] resident = true``): it takes the job,
# then answers in well-formed frames with 200 MB of output and the tar of a 1 GiB sparse file.
RELAY = f"""
import json, os, struct, subprocess, sys
take, out = sys.stdin.buffer, sys.stdout.buffer
left = json.loads(take.readline())["stage"]["size"]
while left > 0:
    left -= len(take.read(min(left, 1 << 20)) or b"x" * left)
def frame(kind, data=b""):
    out.write(struct.pack(">cI", kind, len(data)) + data)
frame(b"D", b"\\0EDGEHUB-START 1\\n")
block = b"{LINE}\\n" * 700
for _ in range(200_000_000 // len(block)):
    frame(b"D", block)
subprocess.run("rm -rf /tmp/hr && mkdir -p /tmp/hr/out && truncate -s 1G /tmp/hr/out/sparse.bin"
               " && echo '{{\\"ok\\": false, \\"error\\": {{\\"message\\": \\"relayed\\"}}}}'"
               " > /tmp/hr/out/result.json && tar --sparse -c -f /tmp/hr/t.tar -C /tmp/hr out",
               shell=True, check=True)
with open("/tmp/hr/t.tar", "rb") as tar:
    data = tar.read()
frame(b"D", b"\\0EDGEHUB-FILES %d\\n" % len(data))
for start in range(0, len(data), 65536):
    frame(b"D", data[start : start + 65536])
frame(b"D", b"\\0EDGEHUB-EXIT 4\\n")
frame(b"E")
out.flush()
take.read()  # a relay lives as long as the connection
"""

# Runs `hub` with its output in files and reports its exit code and peak RSS (its own).
MEASURE = """
import json, resource, subprocess, sys
out, err = sys.argv[1], sys.argv[2]
with open(out, "w") as o, open(err, "w") as e:
    code = subprocess.run(sys.argv[3:], stdout=o, stderr=e).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": code, "peak_rss": peak}))
"""


def _job(stage: Path, remote: str, argv: list[str], local: Path, **options: Any) -> Exchange:
    """An exchange of ``stage`` that brings its folder ``out`` back to ``local``."""
    return Exchange(stage, remote, argv, fetch="out", local=local, **options)


def _blocks(path: Path) -> int:
    return path.stat().st_blocks * 512


# -- the runner against the real device ------------------------------------------------------


def test_get_brings_a_sparse_file_back_sparse(device: SSHDevice, tmp_path: Path) -> None:
    with SSHCommandRunner(device.config()) as runner:
        runner.run(["sh", "-c", "rm -rf sp && mkdir sp && truncate -s 1G sp/big.bin"], hide=True)
        runner.run(["sh", "-c", "printf data | dd of=sp/big.bin bs=1 seek=4096 conv=notrunc"],
                   hide=True)  # fmt: skip
        runner.get("sp", tmp_path / "back")
        moved = runner.transfer_stats.download_bytes
    big = tmp_path / "back" / "big.bin"
    assert big.stat().st_size == GiB
    assert _blocks(big) < 4 * MiB
    with big.open("rb") as handle:
        handle.seek(4096)
        assert handle.read(4) == b"data"
    assert moved < 16 * MiB  # the device's GNU tar sent a sparse archive, not 1 GiB of zeros


def test_get_refuses_too_many_files_and_writes_nothing(
    device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGEHUB_FETCH_MAX_FILES", "50")
    target = tmp_path / "back"
    with SSHCommandRunner(device.config()) as runner:
        runner.run(["sh", "-c", "rm -rf many && mkdir many && cd many && seq 1 200 | xargs touch"],
                   hide=True)  # fmt: skip
        with pytest.raises(DeviceOutputError) as refused:
            runner.get("many", target)
    assert "EDGEHUB_FETCH_MAX_FILES" in str(refused.value)
    assert not target.exists() or not any(target.iterdir())


def test_get_of_one_file_writes_holes_and_checks_its_size(
    device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SSHCommandRunner(device.config()) as runner:
        runner.run(["sh", "-c", "mkdir -p sp && truncate -s 128M sp/one.bin"], hide=True)
        runner.get("sp/one.bin", tmp_path / "one.bin")  # SFTP: zeros on the wire, holes here
        monkeypatch.setenv("EDGEHUB_FETCH_MAX_MEMBER_BYTES", "64M")
        with pytest.raises(DeviceOutputError, match="EDGEHUB_FETCH_MAX_MEMBER_BYTES"):
            runner.get("sp/one.bin", tmp_path / "again.bin")
    one = tmp_path / "one.bin"
    assert one.stat().st_size == 128 * MiB and _blocks(one) < 4 * MiB
    assert not (tmp_path / "again.bin").exists()


def test_run_keeps_head_and_tail_of_a_flood(device: SSHDevice) -> None:
    with SSHCommandRunner(device.config()) as runner:
        result = runner.run(
            ["sh", "-c", "echo first; yes 0123456789 | head -c 100000000; echo; echo last"],
            hide=True,
        )
    assert len(result.stdout) < LOG_CAP + 1024
    assert result.stdout.startswith("first\n") and result.stdout.endswith("last\n")
    assert "dropped here" in result.stdout


def test_exchange_stops_a_device_sending_too_much(
    device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the size limit the stream is refused as it comes: the device's tar is stopped and
    nothing lands here."""
    monkeypatch.setenv("EDGEHUB_FETCH_MAX_BYTES", "8M")
    stage = tmp_path / "stage"
    (stage / "out").mkdir(parents=True)
    with SSHCommandRunner(device.config()) as runner, pytest.raises(DeviceOutputError) as refused:
        runner.exchange(
            _job(
                stage,
                "too-much-job",
                ["sh", "-c", "head -c 100000000 /dev/urandom > out/r"],
                tmp_path / "back",
                hide=True,
            )
        )
    assert "EDGEHUB_FETCH_MAX_BYTES" in str(refused.value)
    assert not (tmp_path / "back").exists()
    assert device.processes_left("tar -c") == ""


def test_exchange_flood_keeps_memory_and_output_bounded(device: SSHDevice, tmp_path: Path) -> None:
    """1 GiB sparse file and 200 MB of stderr through `exchange`: the file comes back sparse,
    the output kept is head and tail within the cap, and this process's memory grows by far
    less than either (its peak RSS is reset first, where the kernel allows: as root)."""
    stage = tmp_path / "stage"
    (stage / "out").mkdir(parents=True)
    flood = f"truncate -s 1G out/sparse.bin; yes '{LINE}' | head -c 200000000 >&2; echo end >&2"
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the RSS now
        before: int | None = _status_kib("VmRSS")
    except OSError:
        before = None  # the peak of this process's whole life: nothing to judge it by
    with SSHCommandRunner(device.config()) as runner:
        result = runner.exchange(
            _job(stage, "bounded-job", ["sh", "-c", flood], tmp_path / "back", hide=True)
        )
    if before is not None:  # what pytest held before (hundreds of MB, test order) is not counted
        growth = _status_kib("VmHWM") - before
        assert growth * 1024 < 120 * MiB, f"peak RSS grew by {growth} KiB during the exchange"
    assert result.returncode == 0
    assert len(result.stderr) < LOG_CAP + 1024
    assert result.stderr.startswith(LINE) and result.stderr.endswith("end\n")
    assert "dropped here" in result.stderr
    sparse = tmp_path / "back" / "sparse.bin"
    assert sparse.stat().st_size == GiB and _blocks(sparse) < 4 * MiB


# -- the real `hub` against a faulty agent on the device ----------------------------------------


@pytest.fixture
def project(device: SSHDevice, tmp_path: Path) -> Path:
    device.exec("sh", "-c", "cat > ~/hostile.sh && chmod 0755 ~/hostile.sh", stdin=HOSTILE)
    device.exec("sh", "-c", "cat > ~/relay.py", stdin=RELAY)
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "bounded"\n\n'
        '[devices.board]\nprovider = "ssh"\nspec = "SSH test device"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n\n'
        '[devices.board.agent]\npython = "/home/edge/hostile.sh"\nresident = false\n'
    )
    (folder / "model.onnx").write_bytes(MODEL.read_bytes())
    return folder


def _hub(
    device: SSHDevice, project: Path, mode: str, env: dict[str, str] | None = None
) -> tuple[int, int, str]:
    """``hub exec invoke`` on the board with the device in ``mode``: (exit code, peak RSS of
    the hub process, its stderr)."""
    device.exec("sh", "-c", f"echo {mode} > ~/hostile-mode")
    environ = {**os.environ, "HOME": str(project / "home"), **(env or {})}
    environ.pop("SSH_AUTH_SOCK", None)
    out, err = project / f"{mode}.out", project / f"{mode}.err"
    argv = ["exec", "invoke", "onnxruntime", "model.onnx", "--device", "board"]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(out), str(err), HUB, *argv],
        cwd=project, env=environ, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    report = json.loads(done.stdout)
    print(f"{mode}: exit {report['code']}, hub's peak RSS {report['peak_rss'] / MiB:.0f} MiB")
    return report["code"], report["peak_rss"], err.read_text(errors="replace")


def _runs(project: Path) -> list[dict[str, object]]:
    listed = subprocess.run(
        [HUB, "runs", "list", "--json"], cwd=project, capture_output=True, text=True, check=True
    )
    runs: list[dict[str, object]] = json.loads(listed.stdout)
    return runs


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1, stderr[-2000:]
    assert "Traceback" not in stderr
    return lines[0]


def test_hub_survives_a_flooding_device(device: SSHDevice, project: Path) -> None:
    code, peak, stderr = _hub(device, project, "flood")
    assert code == 4, stderr[-2000:]
    assert "failed on purpose" in _error_line(stderr)
    assert peak < 300 * MiB, f"hub's peak RSS was {peak / MiB:.0f} MiB"
    (run,) = _runs(project)
    assert run["status"] == "FAILED"
    logs = list((project / ".hub").rglob("run.log"))  # the run's, and its stored copy
    assert logs and all(log.stat().st_size < LOG_CAP + 4096 for log in logs)
    text = logs[0].read_text()
    assert f"[stderr] {LINE}" in text[:1000] and "dropped here" in text
    (sparse,) = (project / ".hub").rglob("sparse.bin")
    assert sparse.stat().st_size == GiB and _blocks(sparse) < 4 * MiB


def test_hub_survives_a_flooding_resident_agent(device: SSHDevice, project: Path) -> None:
    """The same flood through the resident agent's relay (the ``ssh`` provider's default)."""
    config = project / "hub.toml"
    config.write_text(config.read_text().replace("resident = false", "resident = true"))
    code, peak, stderr = _hub(device, project, "flood")
    assert code == 4, stderr[-2000:]
    assert "relayed" in _error_line(stderr)
    assert peak < 300 * MiB, f"hub's peak RSS was {peak / MiB:.0f} MiB"
    logs = list((project / ".hub").rglob("run.log"))
    assert logs and all(log.stat().st_size < LOG_CAP + 4096 for log in logs)
    (sparse,) = (project / ".hub").rglob("sparse.bin")
    assert sparse.stat().st_size == GiB and _blocks(sparse) < 4 * MiB


def test_hub_takes_a_5_gib_sparse_file_in_bounded_memory(device: SSHDevice, project: Path) -> None:
    """Once a MemoryError "internal error": the archive is streamed, never held whole."""
    code, peak, stderr = _hub(device, project, "sparse5g")
    assert code == 4, stderr[-2000:]
    assert "failed on purpose" in _error_line(stderr)
    assert peak < 300 * MiB, f"hub's peak RSS was {peak / MiB:.0f} MiB"
    (sparse,) = (project / ".hub").rglob("sparse.bin")
    assert sparse.stat().st_size == 5 * GiB and _blocks(sparse) < 4 * MiB


def test_hub_reads_a_line_without_end_in_linear_time(device: SSHDevice, project: Path) -> None:
    started = time.monotonic()
    code, peak, stderr = _hub(device, project, "nonl")
    assert code == 4, stderr[-2000:]
    assert time.monotonic() - started < 300  # quadratic joining of 400 MB would take hours
    assert peak < 300 * MiB
    assert "more characters of this line dropped" in stderr
    logs = list((project / ".hub").rglob("run.log"))
    assert logs and all(log.stat().st_size < 256 * 1024 for log in logs)


@pytest.mark.parametrize(
    ("mode", "expected", "exit_code", "env"),
    [
        ("deep", "EDGEHUB_RESULT_MAX_DEPTH", 4, {}),
        ("huge", "EDGEHUB_RESULT_MAX_BYTES", 4, {}),
        ("missing", "no out/input.npz", 4, {}),
        ("many", "EDGEHUB_FETCH_MAX_FILES", 3, {"EDGEHUB_FETCH_MAX_FILES": "100"}),
    ],
)
def test_hub_refuses_bad_results_in_one_line(
    device: SSHDevice, project: Path, mode: str, expected: str, exit_code: int,
    env: dict[str, str],
) -> None:  # fmt: skip
    code, _, stderr = _hub(device, project, mode, env)
    assert code == exit_code, stderr[-2000:]
    assert expected in _error_line(stderr)
    assert [run["status"] for run in _runs(project)] == ["FAILED"]


def _status_kib(field: str) -> int:
    """A ``/proc/self/status`` figure in KiB (``VmRSS``, ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")
