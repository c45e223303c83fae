"""Benchmark the local ONNX Runtime path (run on demand, not in CI). One run, rounds alternating.

(a) Profiler fidelity: edgehub's reported median and p99 latency divided by those of a bare
    `session.run` loop timed in the same image (in the same warm container, so both see the
    same CPU placement), rounds interleaved: on a dynamic-shape conv net (H, W dynamic) profiled
    at a realistic 1x3x320x320 (`input_shape`), a few ms per run, and on the bundled example
    (examples/tiny_cnn.onnx).
(b) Warm job wall time: `hub exec invoke onnxruntime examples/tiny_cnn.onnx` with a warm
    container (EDGEHUB_KEEP_WARM) against `docker exec` into that container of a bare script
    that imports onnxruntime, creates the session and runs it once; the paired ratio (goal <= 1)
    and the split of hub's time: interpreter start-up, CLI import, the agent round trip (of
    which the job in the container), and the rest of the command (context, store, artifacts).
(c) Warm `hub exec profile` wall time against the time of its runs (mean latency x runs, median x
    burn-ins): the constant it adds, next to a warm invoke's wall time.
(e) Warm CLI invoke from the shell, as a user runs it (EDGEHUB_KEEP_WARM=600): `hub -q exec
    invoke onnxruntime examples/tiny_cnn.onnx`, without and with `--input x.npz`, its wall time
    and its host CPU (user + system of the `hub` process, from wait4), rounds alternating with
    the yardstick: `docker exec` into a plain container of the same image (not edgehub's)
    running ``python3 -c "import numpy, onnxruntime; session; run zeros"``. Both commands are
    printed. Goals: each <= 0.8x the yardstick, host CPU <= 80 ms. The same two commands
    with ``EDGEHUB_RESIDENT=on`` (served by the resident host process, `edgehub.cli.resident`):
    their host CPU is the `hub` client's plus that of the resident process's child that ran
    the command (from /proc, once the resident process has reaped it).
(d) Cold invoke: `ONNXRuntimeInvoker().run(ctx, model, None)` in a fresh HubContext without a
    warm container (the job runs as a hardened container of its own, which is then removed)
    against `docker run --rm IMAGE python3 bare.py` of the same work (import, session, one run):
    the paired ratio and the fixed per-run cost (the paired difference of the wall times).

    python benchmarks/bench_ort_local.py [--rounds 9] [--runs 200] [--compare-src DIR]
        [--cold-rounds 9] [--cli-rounds 15] [--only-cli]

``--only-cli`` times (e) alone (about 30 s).

``--compare-src DIR`` also times, in the same rounds, the invoke of another checkout's sources
(``DIR/src`` first on PYTHONPATH), e.g. the commit before a change: a before/after in one run
(the cold invoke too, in a child process serving them). About 1.5 min on an idle 2-core machine.

Set PYTHONDONTWRITEBYTECODE only if you mean to time recompiling every module on each start.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BARE = r"""
import sys, time, json
t0 = time.perf_counter()
import numpy as np
import onnxruntime as ort
runs, warmup = int(sys.argv[2]), int(sys.argv[3])
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
inp = sess.get_inputs()[0]
shape = [d if isinstance(d, int) else 1 for d in inp.shape]
if len(sys.argv) > 4:
    shape = [int(d) for d in sys.argv[4].split(",")]
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
feed = {inp.name: x}
for _ in range(warmup):
    sess.run(None, feed)
samples = []
for _ in range(runs):
    t = time.perf_counter_ns(); sess.run(None, feed); samples.append(time.perf_counter_ns() - t)
ms = np.array(samples) / 1e6
print(json.dumps({"median_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)),
                  "script_s": time.perf_counter() - t0}))
"""
# The hub command with its time split: the agent round trip and the job in it are timed
# around the calls that make them (stderr lines); the rest is measured around main().
SPLIT = r"""
import sys, time
t0 = time.perf_counter()
from edgehub.cli.main import exit_now, main
t1 = time.perf_counter()
from edgehub.toolchains.agent_call import AgentCall
spent = {"call": 0.0}
plain = AgentCall.call
def timed(self, *args, **kwargs):
    start = time.perf_counter()
    try:
        return plain(self, *args, **kwargs)
    finally:
        spent["call"] += time.perf_counter() - start
AgentCall.call = timed
code = main(sys.argv[1:])
t2 = time.perf_counter()
sys.stderr.write(f"SPLIT import={t1 - t0:.6f} main={t2 - t1:.6f} call={spent['call']:.6f}\n")
exit_now(code)
"""
DYNAMIC_SHAPE = "1,3,320,320"
# (e)'s yardstick: what a warm invoke does, as a bare script in a plain container of the image
YARDSTICK = (
    "import numpy as np, onnxruntime as ort; "
    "s = ort.InferenceSession('/w/ex.onnx', providers=['CPUExecutionProvider']); "
    "i = s.get_inputs()[0]; "
    "s.run(None, {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], "
    "np.float32)})"
)


def make_dynamic_model(path: Path) -> None:
    """A conv net with dynamic H and W (8 channels, two 3x3 convs, ~60 M multiply-adds at
    320x320): a few ms per run on an idle core."""
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), f"w{i}")
        for i, shape in enumerate([(8, 3, 3, 3), (8, 8, 3, 3)])
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "bench_dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def hub(*args: str, env: dict[str, str]) -> tuple[float, dict]:
    exe = str(Path(sys.executable).with_name("hub"))
    start = time.perf_counter()
    out = subprocess.run(
        [exe, "-q", *args, "--json"], capture_output=True, text=True, env=env, check=True
    )
    return time.perf_counter() - start, json.loads(out.stdout)


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str, str]:
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, out.stdout, out.stderr


def copy_in(container: str, local: Path, remote: str) -> None:
    """Into the container's /tmp (a tmpfs: `docker cp` cannot write there, the root is
    read-only), readable by the image's user."""
    with local.open("rb") as fh:
        subprocess.run(["docker", "exec", "-i", container, "sh", "-c", f"cat > {remote}"],
                       stdin=fh, check=True)  # fmt: skip


def warm_container(image: str) -> str:
    found = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=org.edgehub.warm=1", "--filter",
         f"ancestor={image}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not found:
        sys.exit(f"no warm container of {image} is running")
    return found[0]


def channel_round_trip(image: str) -> Callable[[], float]:
    """A timer of one empty job (``env``) on the warm container's resident agent, straight over
    its socket: what a round trip costs besides the job's own work."""
    import io
    import tarfile

    from edgehub.agent.bundle import agent_hash
    from edgehub.runners.docker import DockerCommandRunner
    from edgehub.runners.docker.channel import open_agent_job

    runner = DockerCommandRunner(image, keep_warm=600)  # the settings hub uses: adopts its one
    runner.__enter__()
    channel = runner._container.channel
    runner.close()
    if channel is None:
        sys.exit("the warm container has no agent channel (remote daemon or another user?)")
    host_socket = channel / f"edgehub-agent-{agent_hash()[:12]}.sock"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("j/request.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    stage = buffer.getvalue()

    def once() -> float:
        start = time.perf_counter()
        argv = ["env", "--request", "request.json", "--result", "out/result.json"]
        job = open_agent_job(host_socket, argv, f"/work/bench-{time.time_ns()}/j", stage, "out")
        if job is None:
            sys.exit(f"no resident agent answers on {host_socket}")
        for _ in job.read():
            pass
        job.close()
        return time.perf_counter() - start

    return once


def with_cpu(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of the command ``argv``, from its wait4."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode:
        sys.exit(f"{shlex.join(argv)} failed ({child.returncode}): {err.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def resident_server(env: dict[str, str], start: list[str]) -> int:
    """The pid of the resident host process that serves `hub exec` under ``env`` (``start``:
    a command that starts it where it is not running yet)."""
    code = "from edgehub.cli.resident import _socket_path; print(_socket_path())"
    socket_path = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    pid_file = Path(socket_path).with_suffix(".pid")
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and Path(socket_path).exists()):
        if time.monotonic() > deadline:
            sys.exit(f"no resident host process came up ({socket_path})")
        with_cpu(start, env)  # the first call starts it (edgehub's sources changed meanwhile?)
        time.sleep(1.0)
    return int(pid_file.read_text())


def process_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of process ``pid``, and of the children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def reaped_cpu(pid: int, before: tuple[float, float], wait: float = 3.0) -> float:
    """The CPU seconds the resident process ``pid`` and its children gained since ``before``,
    once it has reaped the child that ran the command (it reaps each second)."""
    deadline = time.monotonic() + wait
    now = process_cpu(pid)
    while now[1] <= before[1] and time.monotonic() < deadline:
        time.sleep(0.05)
        now = process_cpu(pid)
    return now[0] + now[1] - before[0] - before[1]


def warm_cli(args: argparse.Namespace, image: str, work: Path, example: Path, env: dict) -> None:
    """(e): the warm CLI invoke from the shell, without and with --input, against `docker exec`
    of the yardstick into a plain container of the same image; rounds alternating."""
    model = onnx.load(example)
    first = model.graph.input[0]
    dims = [d.dim_value or 1 for d in first.type.tensor_type.shape.dim]
    np.savez(work / "x.npz", **{first.name: np.zeros(dims, np.float32)})
    (work / "ex.onnx").write_bytes(example.read_bytes())
    work.chmod(0o755)
    (work / "ex.onnx").chmod(0o644)
    plain = subprocess.run(
        ["docker", "run", "-d", "--rm", "--network", "none", "-v", f"{work}:/w:ro", image,
         "sleep", "3600"], capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    atexit.register(subprocess.run, ["docker", "rm", "-f", plain], capture_output=True)
    hub_exe = str(Path(sys.executable).with_name("hub"))
    invoke = [hub_exe, "-q", "exec", "invoke", "onnxruntime", str(example)]
    commands = {
        "hub": invoke,
        "hub --input": [*invoke, "--input", str(work / "x.npz")],
        "yardstick": ["docker", "exec", plain, "python3", "-c", YARDSTICK],
    }
    envs = dict.fromkeys(commands, env)
    resident_env = {**env, "EDGEHUB_RESIDENT": "on"}  # served by the resident host process
    for name in ("hub", "hub --input"):
        commands[f"{name} [resident]"] = commands[name]
        envs[f"{name} [resident]"] = resident_env
    if args.compare_src is not None:  # the same, from another checkout's sources
        other = {**env, "PYTHONPATH": str(args.compare_src.resolve() / "src")}
        other["EDGEHUB_STORE"] = str(work / "store-other")
        for name in ("hub", "hub --input"):
            commands[f"{name} [other]"] = commands[name]
            envs[f"{name} [other]"] = other
    for name, argv in commands.items():  # warm: container, resident agent, page cache
        with_cpu(argv, envs[name])
    server = resident_server(resident_env, commands["hub [resident]"])
    for name in ("hub [resident]", "hub --input [resident]"):  # now in the resident process
        with_cpu(commands[name], envs[name])
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(args.cli_rounds):
        for name, argv in commands.items():
            before = process_cpu(server)
            wall, cpu = with_cpu(argv, envs[name])
            if name.endswith("[resident]"):  # and the CPU of the child that ran the command
                cpu += reaped_cpu(server, before)
            walls[name].append(wall)
            cpus[name].append(cpu)
    med = statistics.median
    load = os.getloadavg()
    print(
        f"(e) warm CLI invoke from the shell ({args.cli_rounds} rounds alternating; load average "
        f"{load[0]:.2f} on {os.cpu_count()} cores; host CPU = user + system of the command):"
    )
    yard = walls["yardstick"]
    print(
        f"    {'yardstick':<11} {med(yard):.3f} s wall, {med(cpus['yardstick']) * 1000:5.1f} ms "
        f"host CPU (the docker CLI): {shlex.join(commands['yardstick'])}"
    )
    for name in [k for k in commands if k.startswith("hub")]:
        shown = shlex.join(["EDGEHUB_KEEP_WARM=600", "hub", *commands[name][1:]])
        if name.endswith("[resident]"):
            shown = f"EDGEHUB_RESIDENT=on {shown}"
        if name.endswith("[other]"):
            shown = f"PYTHONPATH={args.compare_src}/src {shown}"
        print(
            f"    {name:<11} {med(walls[name]):.3f} s wall = {paired(walls[name], yard):.3f}x the "
            f"yardstick (goal <= 0.8), {med(cpus[name]) * 1000:5.1f} ms host CPU (goal <= 80, "
            f"min {min(cpus[name]) * 1000:.1f}): {shown}"
        )


def cold_invoke(model: Path) -> float:
    """The wall time of one cold invoke through the API, context and store included."""
    from edgehub.core import HubContext
    from edgehub.core.invoke import ONNXRuntimeInvoker
    from edgehub.toolchains.onnxruntime.components import ONNXRuntimeCompiledModel

    os.environ.pop("EDGEHUB_KEEP_WARM", None)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        with HubContext(project_name="bench-ort", artifact_base_dir=Path(tmp)) as ctx:
            ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), None)
        return time.perf_counter() - start


def serve_cold() -> None:
    for line in sys.stdin:
        print(json.dumps(cold_invoke(Path(json.loads(line)))), flush=True)


class OtherTree:
    """Cold invokes by another checkout's sources, in a child process serving them."""

    def __init__(self, source: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(source.resolve() / "src")}
        env.pop("EDGEHUB_KEEP_WARM", None)
        argv = [sys.executable, __file__, "--serve-cold"]
        pipe = subprocess.PIPE
        self.child = subprocess.Popen(argv, env=env, stdin=pipe, stdout=pipe, text=True)

    def once(self, model: Path) -> float:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(json.dumps(str(model)) + "\n")
        self.child.stdin.flush()
        return float(json.loads(self.child.stdout.readline()))

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(60)


def cold_rounds(args: argparse.Namespace, image: str, work: Path, example: Path) -> None:
    """(d): cold invokes against `docker run --rm` of the bare script, rounds interleaved."""
    (work / "ex.onnx").write_bytes(example.read_bytes())
    work.chmod(0o755)
    for name in ("bare.py", "ex.onnx"):
        (work / name).chmod(0o644)
    bare = ["docker", "run", "--rm", "--network", "none", "-v", f"{work}:/w:ro", "-w", "/w",
            image, "python3", "bare.py", "ex.onnx", "1", "0"]  # fmt: skip
    other = OtherTree(args.compare_src) if args.compare_src else None
    cold_invoke(example)  # the agent zipapp built, the image's pages read
    if other is not None:
        other.once(example)
    walls: dict[str, list[float]] = {"hub": [], "bare": [], "other": []}
    for _ in range(args.cold_rounds):
        walls["hub"].append(cold_invoke(example))
        walls["bare"].append(timed(bare)[0])
        if other is not None:
            walls["other"].append(other.once(example))
    if other is not None:
        other.close()
    med = statistics.median
    fixed = med(h - b for h, b in zip(walls["hub"], walls["bare"], strict=True))
    print(
        f"(d) cold invoke of examples/tiny_cnn.onnx ({args.cold_rounds} rounds): edgehub "
        f"{med(walls['hub']):.3f} s vs bare `docker run --rm` {med(walls['bare']):.3f} s, paired "
        f"ratio {paired(walls['hub'], walls['bare']):.3f}, fixed per-run cost {fixed:+.3f} s"
    )
    if walls["other"]:
        other_fixed = med(o - b for o, b in zip(walls["other"], walls["bare"], strict=True))
        print(
            f"    the same from {args.compare_src}: {med(walls['other']):.3f} s, paired ratio "
            f"{paired(walls['other'], walls['bare']):.3f}, fixed per-run cost {other_fixed:+.3f} s"
        )


def paired(hub: list[float], bare: list[float]) -> float:
    """Each round's two figures were taken back to back, so their ratio cancels the machine's
    drift; the median over rounds is the figure."""
    return statistics.median(h / b for h, b in zip(hub, bare, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--compare-src", type=Path, default=None)
    parser.add_argument("--cold-rounds", type=int, default=9)
    parser.add_argument("--cli-rounds", type=int, default=15)
    parser.add_argument("--only-cli", action="store_true", help="time (e) alone")
    parser.add_argument("--serve-cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_cold:
        return serve_cold()

    from edgehub import images

    image = images.require_image("onnxruntime").tag
    work = Path(tempfile.mkdtemp(prefix="edgehub-bench-"))
    atexit.register(shutil.rmtree, work, True)  # however the bench ends
    example = Path(__file__).resolve().parents[1] / "examples" / "tiny_cnn.onnx"
    dynamic = work / "dynamic.onnx"
    make_dynamic_model(dynamic)
    (work / "bare.py").write_text(BARE)
    (work / "split.py").write_text(SPLIT)
    env = {**os.environ, "EDGEHUB_KEEP_WARM": "600", "EDGEHUB_STORE": str(work / "store")}
    bytecode = "on" if env.pop("PYTHONDONTWRITEBYTECODE", None) is None else "unset for this run"
    profile = ["exec", "profile", "onnxruntime", "--set", f"runs={args.runs}",
               "--set", f"burn_ins={args.warmup}", "--set", "profiling_method=python"]  # fmt: skip
    invoke = ["exec", "invoke", "onnxruntime", str(example)]
    hub(*invoke, env=env)  # warm: image, agent zipapp, container, resident agent
    hub(*invoke, env=env)
    if args.only_cli:
        return warm_cli(args, image, work, example, env)
    other_env = None
    if args.compare_src is not None:
        other_env = {**env, "PYTHONPATH": str(args.compare_src.resolve() / "src")}
        other_env["EDGEHUB_STORE"] = str(work / "store-other")
        hub(*invoke, env=other_env)
        hub(*invoke, env=other_env)
    warm = warm_container(image)
    empty_job = channel_round_trip(image)
    transport: list[float] = []
    for name, path in (("bare.py", work / "bare.py"), ("ex.onnx", example), ("dyn.onnx", dynamic)):
        copy_in(warm, path, f"/tmp/{name}")
    bare_loop = ["docker", "exec", warm, "python3", "/tmp/bare.py"]
    shape = ["--set", f"input_shape={DYNAMIC_SHAPE}"]
    cases = {
        f"dynamic-shape conv net at {DYNAMIC_SHAPE.replace(',', 'x')}": (
            [*profile[:3], str(dynamic), *profile[3:], *shape],
            [*bare_loop, "/tmp/dyn.onnx", str(args.runs), str(args.warmup), DYNAMIC_SHAPE],
        ),
        "bundled example tiny_cnn 1x3x32x32": (
            [*profile[:3], str(example), *profile[3:]],
            [*bare_loop, "/tmp/ex.onnx", str(args.runs), str(args.warmup)],
        ),
    }
    fidelity: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in cases}
    profile_walls: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    bare_invoke = [*bare_loop, "/tmp/ex.onnx", "1", "0"]
    python_start = [sys.executable, "-c", "pass"]
    walls: dict[str, list[float]] = {k: [] for k in ("hub", "bare", "python", "split", "other")}
    split: dict[str, list[float]] = {"import": [], "main": [], "call": []}
    script: list[float] = []
    hub_exe = str(Path(sys.executable).with_name("hub"))
    for _ in range(args.rounds):
        for name, (hub_args, bare_args) in cases.items():
            wall, report = hub(*hub_args, env=env)
            runs_s = (args.runs * report["latency_ms"]["mean"] + args.warmup * report[
                "latency_ms"]["median"]) / 1000  # fmt: skip
            profile_walls[name].append((wall, runs_s))
            _, out, _ = timed(bare_args)
            bare = json.loads(out)
            lat = report["latency_ms"]
            fidelity[name].append((lat["median"], bare["median_ms"], lat["p99"], bare["p99_ms"]))
        time.sleep(0.3)
        wall, _, _ = timed([hub_exe, *invoke], env)
        walls["hub"].append(wall)
        wall, out, _ = timed(bare_invoke)
        walls["bare"].append(wall)
        if other_env is not None:
            walls["other"].append(timed([hub_exe, *invoke], other_env)[0])
        script.append(json.loads(out)["script_s"])
        walls["python"].append(timed(python_start, env)[0])
        transport.append(empty_job())
        wall, _, err = timed([sys.executable, str(work / "split.py"), *invoke], env)
        walls["split"].append(wall)
        line = next(x for x in err.splitlines() if x.startswith("SPLIT "))
        for part in line.split()[1:]:
            key, _, value = part.partition("=")
            split[key].append(float(value))

    med = statistics.median
    load = os.getloadavg()
    print(f"image={image} rounds={args.rounds} runs={args.runs} warmup={args.warmup} "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (cores: {os.cpu_count()}), "
          f"bytecode cache {bytecode}")  # fmt: skip
    for name, rows in fidelity.items():
        print(
            f"(a) {name}: median edgehub {med(r[0] for r in rows):.4f} ms, bare loop "
            f"{med(r[1] for r in rows):.4f} ms, paired ratio "
            f"{paired([r[0] for r in rows], [r[1] for r in rows]):.4f}; p99 edgehub "
            f"{med(r[2] for r in rows):.4f} ms, bare {med(r[3] for r in rows):.4f} ms, "
            f"paired ratio {paired([r[2] for r in rows], [r[3] for r in rows]):.4f}"
        )
    ratio = paired(walls["hub"], walls["bare"])
    print(
        f"(b) warm `hub exec invoke onnxruntime examples/tiny_cnn.onnx` {med(walls['hub']):.3f} s"
        f" vs `docker exec` bare script {med(walls['bare']):.3f} s (of which the script itself "
        f"{med(script):.3f} s): paired ratio {ratio:.3f} (goal <= 1.0)"
    )
    if walls["other"]:
        print(
            f"    the same from {args.compare_src}: {med(walls['other']):.3f} s, paired ratio "
            f"{paired(walls['other'], walls['bare']):.3f}; this tree against it "
            f"{paired(walls['hub'], walls['other']):.3f}"
        )
    for name, rows in profile_walls.items():
        print(
            f"(c) warm `hub exec profile` ({args.runs} runs + {args.warmup} burn-ins), {name}: "
            f"{med(w for w, _ in rows):.3f} s = the runs {med(r for _, r in rows):.3f} s + "
            f"{med(w - r for w, r in rows):.3f} s (a warm invoke: {med(walls['hub']):.3f} s)"
        )
    python, imported, main_s = med(walls["python"]), med(split["import"]), med(split["main"])
    call = med(split["call"])
    rest = [
        w - i - m for w, i, m in zip(walls["split"], split["import"], split["main"], strict=True)
    ]
    print(
        f"    hub's time ({med(walls['split']):.3f} s timed around main): interpreter start-up "
        f"and exit {med(rest):.3f} s (of which `python -c pass` {python:.3f} s), CLI import "
        f"{imported:.3f} s, main() {main_s:.3f} s = one agent round trip {call:.3f} s (of which "
        f"the transport, an empty job's round trip, {med(transport):.3f} s, and the job's work "
        f"{call - med(transport):.3f} s) + the rest of the command {main_s - call:.3f} s "
        f"(runtime discovery, project and context, store, container adoption, artifacts)"
    )
    # The warm container is left to expire on its own (keep_warm): others may be using it.
    if args.cli_rounds > 0:
        warm_cli(args, image, work, example, env)
    if args.cold_rounds > 0:
        cold_rounds(args, image, work, example)


if __name__ == "__main__":
    main()
