"""Docker over ``ssh://`` against the local socket, and the two Docker clients (on demand, not CI).

    .venv/bin/python benchmarks/bench_docker_remote.py [--rounds 5]

Starts the SSH test device with this machine's Docker socket inside it
(``tests/ssh_device/docker_host.py``): the same daemon, reached two ways. Printed, each
measured in this one run with the two sides taking turns in every round (medians):

(a) the clients: a fresh interpreter importing a client, connecting and making its first call
    (``inspect_image``), light client (``docker/lite.py``) vs the docker SDK, on the local socket;
(b) the SDK over ``ssh://``: connecting (the SSH handshake), then per call and per exec (each
    exec takes a channel running ``docker system dial-stdio``), against the local socket;
(c) per-job overhead: ``hub exec invoke onnxruntime examples/tiny_cnn.onnx`` (a container
    started and removed per job) over ``ssh://`` vs the local socket, with the ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from ssh_device.docker_host import docker_over_ssh  # noqa: E402

MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
IMAGE = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
CLIENT_START = """
import time, sys
import edgehub.runners.docker.client as c
t = time.perf_counter()
if sys.argv[1] == "lite":
    client = c.connect()
else:
    from edgehub.runners.docker.sdk import SDKClient
    client = SDKClient()
client.inspect_image(sys.argv[2])
print(time.perf_counter() - t)
"""


def _median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:8.1f} ms"


def client_start(rounds: int) -> None:
    times: dict[str, list[float]] = {"lite": [], "sdk": []}
    for _ in range(rounds):
        for kind in times:
            done = subprocess.run(
                [sys.executable, "-c", CLIENT_START, kind, IMAGE],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            times[kind].append(float(done.stdout))
    lite, sdk = (statistics.median(times[k]) for k in ("lite", "sdk"))
    print("(a) import + connect + first call, local socket (fresh interpreter)")
    print(f"    light client {_median_ms(times['lite'])}   docker SDK {_median_ms(times['sdk'])}"
          f"   SDK/light {sdk / lite:.1f}x")  # fmt: skip


def _timed(call: Callable[[], object], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        call()
    return (time.perf_counter() - started) / count


def sdk_calls(env: dict[str, str], rounds: int) -> None:
    from edgehub.runners.docker.exec import exec_quiet
    from edgehub.runners.docker.sdk import SDKClient

    # ssh first: the SDK leaves paramiko out when first imported for a local daemon (sdk.py)
    sides = {"ssh": env, "local": {"DOCKER_HOST": ""}}
    figures: dict[str, dict[str, list[float]]] = {
        side: {"connect": [], "call": [], "exec": []} for side in sides
    }
    saved = {k: os.environ.get(k) for k in ("DOCKER_HOST", "HOME")}
    container = subprocess.run(
        ["docker", "run", "-d", "--rm", "--network", "none", IMAGE, "sleep", "600"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        for _ in range(rounds):
            for side, values in sides.items():
                os.environ.update({k: v for k, v in values.items() if v})
                if not values.get("DOCKER_HOST"):
                    os.environ.pop("DOCKER_HOST", None)
                started = time.perf_counter()
                client = SDKClient()
                figures[side]["connect"].append(time.perf_counter() - started)
                figures[side]["call"].append(_timed(lambda c=client: c.inspect_image(IMAGE), 10))
                run = lambda c=client: exec_quiet(c, container, ["true"])  # noqa: E731
                figures[side]["exec"].append(_timed(run, 5))
                client.close()
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    print("(b) docker SDK: local socket vs ssh:// (same daemon)")
    for what in ("connect", "call", "exec"):
        local, ssh = (statistics.median(figures[s][what]) for s in ("local", "ssh"))
        print(f"    {what:8s} local {local * 1e3:8.1f} ms   ssh {ssh * 1e3:8.1f} ms   "
              f"ratio {ssh / local:6.1f}x")  # fmt: skip


def job_overhead(env: dict[str, str], rounds: int) -> None:
    times: dict[str, list[float]] = {"local": [], "ssh": []}
    with tempfile.TemporaryDirectory(prefix="edgehub-bench-remote-") as folder:
        work = Path(folder)
        shutil.copy(MODEL, work / "model.onnx")
        local_env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
        ssh_env = {**local_env, **env}
        for _ in range(rounds):
            for side, side_env in (("local", local_env), ("ssh", ssh_env)):
                started = time.perf_counter()
                subprocess.run(
                    [HUB, "-q", "exec", "invoke", "onnxruntime", "model.onnx"],
                    cwd=work, env=side_env, capture_output=True, check=True,
                )  # fmt: skip
                times[side].append(time.perf_counter() - started)
    local, ssh = (statistics.median(times[s]) for s in ("local", "ssh"))
    print("(c) hub exec invoke onnxruntime tiny_cnn.onnx (container per job)")
    print(f"    local socket {local:6.3f} s   ssh:// {ssh:6.3f} s   overhead {ssh - local:+.3f} s"
          f"   ratio {ssh / local:.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    client_start(args.rounds)
    with (
        tempfile.TemporaryDirectory(prefix="edgehub-bench-home-") as home,
        docker_over_ssh(Path(home)) as host,
    ):
        env = {"DOCKER_HOST": host.url, "HOME": home}
        sdk_calls(env, args.rounds)
        job_overhead(env, args.rounds)
        print(f"    SSH logins in all: {host.logins()} ({2 * args.rounds} clients or jobs)")


if __name__ == "__main__":
    main()
