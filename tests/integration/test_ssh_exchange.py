"""One round trip per call over SSH: the runner's ``exchange`` (files in, command, folder back
on one channel) and the ``ssh`` provider's relay to the resident agent (a warm job opens no
channel at all), with what must hold for them: nothing left on the device after a timeout or a
cancel, a relay the job cannot use falls back to ``exchange``, the results are the same."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.core.context import HubContext
from edgehub.core.device import Device
from edgehub.errors import CommandCancelled, CommandTimeout, RunnerError
from edgehub.runners.protocol import Exchange
from edgehub.runners.ssh import SSHCommandRunner
from edgehub.toolchains.onnxruntime import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)
from edgehub.toolchains.remote.config import SSHAgentConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice
from unit.agent_models import make_cnn

pytestmark = pytest.mark.ssh
DEVICE_PYTHON = "/opt/device/bin/python3"


def _job(stage: Path, remote: str, argv: list[str], local: Path, **options: Any) -> Exchange:
    """An exchange of ``stage`` that brings its folder ``out`` back to ``local``."""
    return Exchange(stage, remote, argv, fetch="out", local=local, **options)


def _stage(tmp_path: Path) -> Path:
    stage = tmp_path / "stage"
    (stage / "in" / "deep").mkdir(parents=True)
    (stage / "out").mkdir()
    (stage / "in" / "deep" / "it's a file.txt").write_text("payload")
    return stage


# --- exchange ------------------------------------------------------------------------------


def test_exchange_is_one_channel_and_brings_the_folder_back(
    device: SSHDevice, tmp_path: Path
) -> None:
    stage = _stage(tmp_path)
    script = 'cp "in/deep/$1" out/copy.txt; echo "said $1"; pwd; exit 3'
    with SSHCommandRunner(device.config()) as runner:
        runner.run(["true"], hide=True)
        runner.work_folder()  # its janitor found the device's tar: no probe in the exchange
        channels, stats = runner.channels_opened, runner.transfer_stats.uploads
        result = runner.exchange(
            _job(
                stage,
                "/tmp/ex dir/job 1",
                ["sh", "-c", script, "sh", "it's a file.txt"],
                tmp_path / "back",
                hide=True,
            )
        )
        assert runner.channels_opened - channels == 1  # files in, command, files out
        assert runner.transfer_stats.uploads == stats  # no SFTP, no tar channel
        left = runner.run(["ls", "-A", "/tmp/ex dir/job 1"], hide=True).stdout.split()
    assert result.returncode == 3
    assert result.stderr.splitlines() == ["said it's a file.txt", "/tmp/ex dir/job 1"]
    assert (tmp_path / "back" / "copy.txt").read_text() == "payload"
    assert sorted(left) == ["in", "out"]
    assert device.processes_left("while read -r _") == ""  # the lifeline ended with the command


def test_exchange_where_the_files_cannot_go_says_so(device: SSHDevice, tmp_path: Path) -> None:
    runner = SSHCommandRunner(device.config())
    with runner, pytest.raises(RunnerError, match="cannot stage files"):
        runner.exchange(
            _job(
                _stage(tmp_path),
                "/proc/nope/job",
                ["touch", "/tmp/ran"],
                tmp_path / "back",
                hide=True,
            )
        )
    assert device.exec("ls", "/tmp/ran", check=False).returncode != 0  # nothing ran


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_exchange_stopped_leaves_nothing_on_the_device(
    device: SSHDevice, tmp_path: Path, stop: str
) -> None:
    argv = ["sh", "-c", "sleep 417 & sleep 418"]
    with SSHCommandRunner(device.config()) as runner:
        started = time.monotonic()
        if stop == "timeout":
            with pytest.raises(CommandTimeout):
                runner.exchange(
                    _job(
                        _stage(tmp_path),
                        "/tmp/ex/stopped",
                        argv,
                        tmp_path / "back",
                        timeout=1.5,
                        hide=True,
                    )
                )
        else:
            timer = threading.Timer(1.5, runner.cancel)
            timer.start()
            with pytest.raises(CommandCancelled):
                runner.exchange(
                    _job(_stage(tmp_path), "/tmp/ex/stopped", argv, tmp_path / "back", hide=True)
                )
            timer.join()
        assert time.monotonic() - started < 15
    assert device.processes_left("sleep 41") == ""


# --- the resident agent through the relay --------------------------------------------------


def _context(device: SSHDevice, tmp_path: Path) -> HubContext:
    board = Device(
        name="pi",
        runner=SSHCommandRunner(device.config()),
        provider_type="ssh",
        provider_config=SSHAgentConfig(python=DEVICE_PYTHON),
    )
    return HubContext(artifact_base_dir=tmp_path / "store", devices=[board])


def _reference(model: Path, inputs: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]  # type: ignore[no-any-return]


def _warm_invoke(ctx: HubContext, model: ONNXRuntimeCompiledModel, inputs: dict[str, np.ndarray]
                 ) -> tuple[np.ndarray, int]:  # fmt: skip
    """An invoke once the relay reaches a server: (its output, the channels it opened)."""
    runner = ctx.device("pi").runner
    assert isinstance(runner, SSHCommandRunner)
    deadline = time.monotonic() + 60
    while True:
        before = runner.channels_opened
        output = ONNXRuntimeInvoker().run(ctx, model, inputs).output["logits"]
        opened = runner.channels_opened - before
        if opened == 0 or time.monotonic() > deadline:
            return output, opened
        time.sleep(0.3)  # the server this context started is still loading


def test_relay_runs_warm_jobs_without_a_channel_and_is_gone_after(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    inputs = {"image": np.random.default_rng(5).standard_normal((1, 3, 16, 16), np.float32)}
    compiled = ONNXRuntimeCompiledModel.from_path(model)
    with _context(device, tmp_path) as ctx:
        first = ONNXRuntimeInvoker().run(ctx, compiled, inputs).output["logits"]
        runner = ctx.device("pi").runner
        assert isinstance(runner, SSHCommandRunner)
        warm, opened = _warm_invoke(ctx, compiled, inputs)
        assert opened == 0, "a warm job goes down the relay's channel"
        sent = runner.transfer_stats.uploads
        again, opened = _warm_invoke(ctx, compiled, inputs)
        assert (opened, runner.transfer_stats.uploads) == (0, sent)  # the model is linked
        assert "relay --socket" in device.processes_left("relay --socket", within=0)
    expected = _reference(model, inputs)
    for output in (first, warm, again):
        np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-5)
    assert (
        device.processes_left("--socket /home/edge/.cache/edgehub/work/") == ""
    )  # relay and server stopped


def test_relay_job_cancelled_midway_is_killed_on_the_device(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = ONNXRuntimeCompiledModel.from_path(make_cnn(tmp_path / "cnn.onnx"))
    inputs = {"image": np.ones((1, 3, 16, 16), np.float32)}
    with _context(device, tmp_path) as ctx:
        runner = ctx.device("pi").runner
        assert isinstance(runner, SSHCommandRunner)
        _, opened = _warm_invoke(ctx, model, inputs)
        assert opened == 0
        server = device.exec("pgrep", "-u", "edge", "-f", "serve --socket").stdout.split()
        assert len(server) == 1
        before = runner.channels_opened
        timer = threading.Timer(2.0, ctx.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(CommandCancelled):
            ONNXRuntimeProfiler(runs=1_000_000, burn_ins=0).run(ctx, model)
        timer.join()
        assert time.monotonic() - started < 15
        assert runner.channels_opened - before <= 1  # at most a kill; no exchange ran it
        # the job (a child of the server) and the relay are gone; the server waits on
        jobs = _ours_left_children(device, server[0])
        assert jobs == "", jobs
        assert device.processes_left("relay --socket") == ""
        before = runner.channels_opened
        ONNXRuntimeInvoker().run(ctx, model, inputs)
        assert runner.channels_opened - before == 1  # a new relay's channel took the job
        assert "relay --socket" in device.processes_left("relay --socket", within=0)
    assert device.processes_left("--socket /home/edge/.cache/edgehub/work/") == ""


def _ours_left_children(device: SSHDevice, parent: str, within: float = 30.0) -> str:
    deadline = time.monotonic() + within
    while True:
        found = device.exec("pgrep", "-P", parent, check=False).stdout.strip()
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_relay_without_a_server_falls_back_to_exchange(device: SSHDevice, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    inputs = {"image": np.random.default_rng(6).standard_normal((1, 3, 16, 16), np.float32)}
    compiled = ONNXRuntimeCompiledModel.from_path(model)
    with _context(device, tmp_path) as ctx:
        runner = ctx.device("pi").runner
        assert isinstance(runner, SSHCommandRunner)
        _, opened = _warm_invoke(ctx, compiled, inputs)
        assert opened == 0
        device.exec("pkill", "-TERM", "-u", "edge", "-f", "serve --socket")
        assert device.processes_left("serve --socket") == ""
        before = runner.channels_opened
        output = ONNXRuntimeInvoker().run(ctx, compiled, inputs).output["logits"]
        assert runner.channels_opened - before == 1  # the relay found no server: exchange
        assert "relay --socket" in device.processes_left("relay --socket", within=0)
    np.testing.assert_allclose(output, _reference(model, inputs), rtol=1e-5, atol=1e-5)
    assert device.processes_left("--socket /home/edge/.cache/edgehub/work/") == ""
