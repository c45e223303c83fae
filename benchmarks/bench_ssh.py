"""The SSH providers' figures against bare scripts on the same device (on demand, not CI).

    .venv/bin/python benchmarks/bench_ssh.py [--repeat 15] [--size-mb 100] [--rounds 9]
        [--only-invoke [--cpu-repeat N]]

Starts the SSH test device (tests/ssh_device) and prints, each measured in this one run:

(a) invoke round trip through ``embedl_onnxruntime`` (warm context) vs a bare paramiko script
    with TCP_NODELAY doing the same steps (upload the inputs, ``run-inference``, download);
(b) warm invoke through ``ssh`` with the resident agent vs the same bare script; with
    ``--only-invoke`` also the time between the job sent down the relay and its end frame
    (the device's work and the wire), and the rest of the call: edgehub's own (goal 15 ms);
(c) 100 MB upload and download through the runner vs OpenSSH ``scp``;
(d) the same model profiled twice in one context: model bytes sent the second time;
(e) the ``ssh`` profiler's reported median vs a bare ``session.run`` loop on the device, for a
    conv net of a few ms per run (``conv_model``: too small a model measures noise): in each of
    ``--rounds`` rounds the profiler (200 timed runs, method ``python``, random inputs) and the
    bare loop (a fresh ``python3`` on the device: 10 untimed, 200 timed runs of the same inputs)
    take turns; printed: the median of the rounds' ratios, their spread (middle half, all) and
    each round's pair (a load swing on a shared machine hits one side of a round).

Medians; methods take turns in each round (the order reversed every other round), so load
swings on a shared machine hit all alike; a ratio is the median of the rounds' own ratios, with
the 95% interval of that median. The device's ``embedl-onnxruntime`` starts a fresh Python per
call, whose time swings by tens of ms: (a) needs about 200 rounds (``--repeat 201``) for an
interval a few percent wide, enough to tell a 1.05x goal apart.
``--only-invoke`` times (a) and (b) alone, with each side's host CPU per call (user + system
of this process: edgehub's work, and paramiko's on both sides, over ``--cpu-repeat`` rounds,
default ``--repeat``: CPU time swings far less than the device's wall time) and what each
side does.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_ssh_transfer import _rates, _scp_args  # noqa: E402

from edgehub.core.context import HubContext  # noqa: E402
from edgehub.core.device import Device  # noqa: E402
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig  # noqa: E402
from edgehub.runners.ssh import SSHCommandRunner  # noqa: E402
from edgehub.toolchains.onnxruntime import (  # noqa: E402
    ONNXRuntimeCompiledModel,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)
from edgehub.toolchains.remote.config import SSHAgentConfig  # noqa: E402
from edgehub.tracking.percentiles import percentile_ci  # noqa: E402
from ssh_device.device import SSHDevice, ssh_device  # noqa: E402
from unit.agent_models import make_cnn  # noqa: E402

MODEL = REPO / "examples" / "tiny_cnn.onnx"
DEVICE_PYTHON = "/opt/device/bin/python3"
BARE_LOOP = """
import sys, time, statistics, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0)
feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape])
         .astype(np.float32) for i in s.get_inputs()}
for _ in range(10): s.run(None, feeds)
t = []
for _ in range(200):
    a = time.perf_counter_ns(); s.run(None, feeds); t.append(time.perf_counter_ns() - a)
print(statistics.median(t) / 1e6)
"""


def conv_model(path: Path, size: int = 256) -> Path:
    """A static conv net (3 -> 16 -> 16 channels, 3x3, ``size`` x ``size``): a few ms per
    run on one core of the device container."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    weights = [
        numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), f"w{i}")
        for i, shape in enumerate([(16, 3, 3, 3), (16, 16, 3, 3)])
    ]
    pads = [1, 1, 1, 1]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], pads=pads),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], kernel_shape=[3, 3], pads=pads),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "bench_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])],
        weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


class BareScript:
    """paramiko with a TCP_NODELAY socket: upload inputs, run-inference, download output."""

    def __init__(self, device: SSHDevice) -> None:
        import paramiko

        sock = socket.create_connection((device.host, device.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client = paramiko.SSHClient()
        self.client.load_host_keys(str(device.known_hosts))
        self.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        self.client.connect(device.host, port=device.port, username=device.username, sock=sock,
                            key_filename=str(device.private_key), allow_agent=False,
                            look_for_keys=False)  # fmt: skip
        self.sftp = self.client.open_sftp()
        self.exec("mkdir -p bare/in bare/out")
        self.sftp.put(str(MODEL), "bare/model.onnx")

    def exec(self, command: str) -> str:
        _, out, err = self.client.exec_command(command)
        text = out.read().decode()
        if out.channel.recv_exit_status() != 0:
            raise RuntimeError(err.read().decode())
        return text

    def invoke(self, inputs: Path, local: Path) -> None:
        self.sftp.put(str(inputs), "bare/in/data.npz")
        self.exec("embedl-onnxruntime run-inference --model bare/model.onnx --input-dir bare/in "
                  "--output-dir bare/out --use-npz")  # fmt: skip
        self.sftp.get("bare/out/data.npz", str(local))


def _walls_ms(rounds: int, methods: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Each method's wall time per round (ms); the order turns each round (forwards, then
    backwards), so neither side always runs first after the other's work."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    order = list(methods.items())
    for round_ in range(rounds):
        for name, once in order if round_ % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            once()
            times[name].append((time.perf_counter() - started) * 1000)
    return times


def _paired(side: list[float], bare: list[float]) -> tuple[float, float, float]:
    """The median of the rounds' ratios and its 95% interval: each round's two calls ran back
    to back, so a load swing on a shared machine hits both and cancels in their ratio. The
    interval is the median's own (`percentile_ci`: distribution-free, from the order
    statistics), so it narrows with more rounds: a goal is met when the top of the interval is
    at or under it. Too few rounds for one: the smallest and largest ratio."""
    ratios = [a / b for a, b in zip(side, bare, strict=True)]
    median = percentile_ci(np.asarray(ratios), 0.5)
    low = min(ratios) if median.low is None else median.low
    high = max(ratios) if median.high is None else median.high
    return median.value, low, high


def _cpu_ms(rounds: int, methods: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Host CPU (user + system of this process) per call of each method, rounds alternating."""
    spent = dict.fromkeys(methods, 0.0)
    for _ in range(rounds):
        for name, once in methods.items():
            started = time.process_time()
            once()
            spent[name] += time.process_time() - started
    return {name: total * 1000 / rounds for name, total in spent.items()}


class RelayClock:
    """Times each relay job from the moment its request is sent until its end frame arrives:
    the device's work for it and the wire (loopback here). The rest of a call is edgehub's."""

    def __init__(self) -> None:
        from edgehub.agent.server.relay import END
        from edgehub.runners.ssh.relay import AgentRelay

        self.spans: list[float] = []
        sent: list[float] = []
        send, frames = AgentRelay.send, AgentRelay.frames

        def timed_send(relay: Any, data: bytes) -> None:
            sent[:] = [time.perf_counter()]
            send(relay, data)

        def timed_frames(relay: Any) -> Any:
            for kind, payload in frames(relay):
                if kind == END and sent:
                    self.spans.append(time.perf_counter() - sent.pop())
                yield kind, payload

        AgentRelay.send, AgentRelay.frames = timed_send, timed_frames  # type: ignore[method-assign]


def _device_share(rounds: int, once: Callable[[], Any]) -> tuple[float, float]:
    """Median wall time of ``once`` and the median of its relay job's span (ms)."""
    clock = RelayClock()
    walls = []
    for _ in range(rounds):
        started = time.perf_counter()
        once()
        walls.append(time.perf_counter() - started)
    assert len(clock.spans) == rounds, f"{len(clock.spans)} relay jobs timed, {rounds} expected"
    return 1000 * statistics.median(walls), 1000 * statistics.median(clock.spans)


def _print_invoke(walls: dict[str, list[float]], cpu: dict[str, float], device: SSHDevice) -> None:
    where = f"{device.username}@{device.host}:{device.port}"
    print(f"bare: paramiko (TCP_NODELAY) to {where}: sftp put input.npz; exec "
          "'embedl-onnxruntime run-inference --model bare/model.onnx --input-dir bare/in "
          "--output-dir bare/out --use-npz'; sftp get bare/out/data.npz")  # fmt: skip
    print(
        "edgehub: ONNXRuntimeInvoker().run(ctx, model, inputs) in one warm HubContext, "
        f"device 'board' on {where} with provider embedl_onnxruntime (a), ssh (b)"
    )
    times = {name: statistics.median(spent) for name, spent in walls.items()}
    ratio, low, high = _paired(walls["embedl_onnxruntime"], walls["bare"])
    print(f"(a) invoke, embedl_onnxruntime: {times['embedl_onnxruntime']:.1f} ms vs bare "
          f"{times['bare']:.1f} ms over {len(walls['bare'])} rounds: paired ratio {ratio:.3f}x, "
          f"95% interval of that median {low:.3f}-{high:.3f} (goal <= 1.05x; ratio of the medians "
          f"{times['embedl_onnxruntime'] / times['bare']:.3f}x); host CPU per call "
          f"{cpu['embedl_onnxruntime']:.1f} vs {cpu['bare']:.1f} ms")  # fmt: skip
    print(f"(b) warm invoke, ssh resident agent: {times['ssh (resident)']:.1f} ms "
          f"(goal <= 15 ms + the device's run time); host CPU per call "
          f"{cpu['ssh (resident)']:.1f} ms")  # fmt: skip


def _context(device: SSHDevice, store: Path, provider: str) -> HubContext:
    config: Any = (
        EmbedlONNXRuntimeConfig() if provider == "embedl_onnxruntime"
        else SSHAgentConfig(python=DEVICE_PYTHON)
    )  # fmt: skip
    board = Device(name="board", runner=SSHCommandRunner(device.config()),
                   provider_type=provider, provider_config=config)  # fmt: skip
    return HubContext(artifact_base_dir=store, devices=[board])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds for (a) and (b)")
    parser.add_argument("--size-mb", type=int, default=100, help="transfer size for (c)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds for (e)")
    parser.add_argument("--only-invoke", action="store_true", help="(a) and (b) alone")
    parser.add_argument(
        "--cpu-repeat", type=int, help="rounds for --only-invoke's host CPU and (b)'s split"
    )
    args = parser.parse_args()
    with ssh_device() as device, tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        inputs = {"image": np.random.default_rng(0).standard_normal((1, 3, 32, 32), np.float32)}
        np.savez(work / "input.npz", **inputs)
        bare = BareScript(device)
        model = ONNXRuntimeCompiledModel.from_path(MODEL)
        with (
            _context(device, work / "s1", "embedl_onnxruntime") as eort,
            _context(device, work / "s2", "ssh") as agent,
        ):
            ONNXRuntimeInvoker().run(eort, model, inputs)  # warm: connection, model uploaded
            ONNXRuntimeInvoker().run(agent, model, inputs)  # warm: resident agent started
            ONNXRuntimeInvoker().run(agent, model, inputs)
            methods: dict[str, Callable[[], Any]] = {
                "bare": lambda: bare.invoke(work / "input.npz", work / "bare_out.npz"),
                "embedl_onnxruntime": lambda: ONNXRuntimeInvoker().run(eort, model, inputs),
                "ssh (resident)": lambda: ONNXRuntimeInvoker().run(agent, model, inputs),
            }
            walls = _walls_ms(args.repeat, methods)
            times = {name: statistics.median(spent) for name, spent in walls.items()}
            if args.only_invoke:
                cpu_rounds = args.cpu_repeat or args.repeat
                _print_invoke(walls, _cpu_ms(cpu_rounds, methods), device)
                wall, span = _device_share(cpu_rounds, methods["ssh (resident)"])
                print(f"(b) of a {wall:.1f} ms call, {span:.1f} ms pass between the job sent "
                      "down the relay and its end frame (the device's work and the loopback "
                      f"wire); edgehub's own: {wall - span:.1f} ms (goal <= 15 ms)")  # fmt: skip
                bare.client.close()
                return 0
            runner = agent.device("board").runner
            assert isinstance(runner, SSHCommandRunner)
            fresh = ONNXRuntimeCompiledModel.from_path(make_cnn(work / "fresh.onnx", seed=7))
            sizes = [runner.transfer_stats.upload_bytes]
            for _ in range(2):
                ONNXRuntimeProfiler(runs=20, burn_ins=2).run(agent, fresh)
                sizes.append(runner.transfer_stats.upload_bytes)
            first, second = sizes[1] - sizes[0], sizes[2] - sizes[1]
            fresh_bytes = (work / "fresh.onnx").stat().st_size
            conv = ONNXRuntimeCompiledModel.from_path(conv_model(work / "conv.onnx"))
            bare.sftp.put(str(work / "conv.onnx"), "bare/conv.onnx")
            profiler = ONNXRuntimeProfiler(runs=200, burn_ins=10, profiling_method="python")
            profiler.run(agent, conv)  # warm: model uploaded
            ratios, reported, looped = [], [], []
            for _ in range(args.rounds):
                reported.append(float(profiler.run(agent, conv).latency.value))
                loop = bare.exec(f"{DEVICE_PYTHON} -c '{BARE_LOOP}' bare/conv.onnx")
                looped.append(float(loop.strip()))
                ratios.append(reported[-1] / looped[-1])
        bare.client.close()

        size = args.size_mb * 1_000_000
        source = work / "payload.bin"
        with source.open("wb") as handle:
            for _ in range(args.size_mb):
                handle.write(os.urandom(1_000_000))
        target = f"{device.username}@{device.host}"
        with SSHCommandRunner(device.config()) as warm:
            warm.put(source, "bench/source.bin")

            def scp(*words: str) -> None:
                subprocess.run([*_scp_args(device), *words], check=True)

            up = _rates(size, 3, {
                "runner": lambda i: warm.put(source, f"bench/up-{i}.bin"),
                "scp": lambda i: scp(str(source), f"{target}:bench/scp-{i}.bin"),
            })  # fmt: skip
            down = _rates(size, 3, {
                "runner": lambda i: warm.get("bench/source.bin", work / f"down-{i}.bin"),
                "scp": lambda i: scp(f"{target}:bench/source.bin", str(work / f"scp-{i}.bin")),
            })  # fmt: skip

    ratio, low, high = _paired(walls["embedl_onnxruntime"], walls["bare"])
    print(f"(a) invoke, embedl_onnxruntime: {times['embedl_onnxruntime']:.0f} ms vs bare "
          f"{times['bare']:.0f} ms: paired ratio {ratio:.3f}x, 95% interval {low:.3f}-{high:.3f} "
          "(goal <= 1.05x)")  # fmt: skip
    print(f"(b) warm invoke, ssh resident agent: {times['ssh (resident)']:.0f} ms vs bare "
          f"{times['bare']:.0f} ms = {times['ssh (resident)'] / times['bare']:.2f}x "
          "(goal <= 0.3x)")  # fmt: skip
    print(f"(c) {args.size_mb} MB, warm runner vs scp: upload {up['runner']:.0f} vs "
          f"{up['scp']:.0f} MB/s = {up['runner'] / up['scp']:.2f}x; download "
          f"{down['runner']:.0f} vs {down['scp']:.0f} MB/s = {down['runner'] / down['scp']:.2f}x "
          "(goal >= 1.3x each)")  # fmt: skip
    print(f"(d) same {fresh_bytes}-byte model profiled twice: {first} bytes sent the first "
          f"time, {second} the second (request only; goal: 0 model bytes)")  # fmt: skip
    quartiles = statistics.quantiles(ratios, n=4)
    pairs = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(reported, looped, strict=True))
    print(f"(e) profile median, ssh provider {statistics.median(reported):.3f} ms vs bare "
          f"session.run loop {statistics.median(looped):.3f} ms over {args.rounds} rounds: "
          f"ratio median {statistics.median(ratios):.3f} (goal 0.98-1.02), middle half "
          f"{quartiles[0]:.3f}-{quartiles[2]:.3f}, all {min(ratios):.3f}-{max(ratios):.3f}; "
          f"rounds (ssh/bare) {pairs} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
