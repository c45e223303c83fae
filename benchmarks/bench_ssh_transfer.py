"""Upload/download throughput of `SSHCommandRunner` against OpenSSH `scp` (on demand, not CI).

    .venv/bin/python benchmarks/bench_ssh_transfer.py [--size-mb 100] [--repeat 3]

Starts the SSH test device container (tests/ssh_device), moves one file of random bytes each
way with each method, and prints the median MB/s (MB = 10^6 bytes) and the ratio to scp.
"runner, warm" reuses one connection (how providers use it); "runner, cold" includes connecting
and authenticating, as every `scp` call does; "paramiko defaults" is plain `SFTPClient.put/get`
on an untuned transport, for reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from edgehub.runners.ssh import SSHCommandRunner  # noqa: E402
from ssh_device.device import SSHDevice, ssh_device  # noqa: E402


def _rates(size: int, repeat: int, methods: dict[str, Callable[[int], None]]) -> dict[str, float]:
    """Median MB/s per method; the methods take turns in each round, so load swings on a shared
    machine hit all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    for attempt in range(repeat):
        for name, once in methods.items():
            started = time.perf_counter()
            once(attempt)
            times[name].append(time.perf_counter() - started)
    return {name: size / statistics.median(spent) / 1e6 for name, spent in times.items()}


def _scp_args(device: SSHDevice) -> list[str]:
    return [
        "scp", "-q", "-P", str(device.port), "-i", str(device.private_key),
        "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={device.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
    ]  # fmt: skip


def _plain_paramiko(device: SSHDevice) -> object:
    import paramiko

    client = paramiko.SSHClient()
    client.load_host_keys(str(device.known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        device.host,
        port=device.port,
        username=device.username,
        key_filename=str(device.private_key),
        allow_agent=False,
        look_for_keys=False,
    )
    return client


def _closing(runner: SSHCommandRunner, use: Callable[[SSHCommandRunner], None]) -> None:
    with runner:
        use(runner)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100, help="file size in MB (10^6 bytes)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per method (median shown)")
    args = parser.parse_args()
    size = args.size_mb * 1_000_000

    with ssh_device() as device, tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        source = work / "payload.bin"
        with source.open("wb") as handle:
            for _ in range(args.size_mb):
                handle.write(os.urandom(1_000_000))
        target = f"{device.username}@{device.host}"

        client = _plain_paramiko(device)
        sftp = client.open_sftp()  # type: ignore[attr-defined]
        runner = SSHCommandRunner(device.config())
        runner.put(source, "bench/source.bin")

        def fresh() -> SSHCommandRunner:
            return SSHCommandRunner(device.config())

        def scp(*words: str) -> None:
            subprocess.run([*_scp_args(device), *words], check=True)

        uploads: dict[str, Callable[[int], None]] = {
            "runner, warm": lambda i: runner.put(source, f"bench/warm-{i}.bin"),
            "runner, cold": lambda i: _closing(
                fresh(), lambda r: r.put(source, f"bench/c-{i}.bin")
            ),
            "scp": lambda i: scp(str(source), f"{target}:bench/scp-{i}.bin"),
            "paramiko defaults": lambda i: sftp.put(str(source), f"bench/plain-{i}.bin"),
        }
        downloads: dict[str, Callable[[int], None]] = {
            "runner, warm": lambda i: runner.get("bench/source.bin", work / f"warm-{i}.bin"),
            "runner, cold": lambda i: _closing(
                fresh(), lambda r: r.get("bench/source.bin", work / f"cold-{i}.bin")
            ),
            "scp": lambda i: scp(f"{target}:bench/source.bin", str(work / f"scp-{i}.bin")),
            "paramiko defaults": lambda i: sftp.get("bench/source.bin", str(work / f"p-{i}.bin")),
        }
        up_rates = _rates(size, args.repeat, uploads)
        down_rates = _rates(size, args.repeat, downloads)
        rates = {name: (up_rates[name], down_rates[name]) for name in uploads}
        runner.close()
        client.close()  # type: ignore[attr-defined]

        for copy in work.glob("*-*.bin"):
            assert copy.stat().st_size == size, f"{copy} is incomplete"

    scp_up, scp_down = rates["scp"]
    print(f"{args.size_mb} MB, median of {args.repeat}, MB/s (ratio to scp)")
    print(f"{'method':<20} {'upload':>16} {'download':>16}")
    for name, (up, down) in rates.items():
        print(f"{name:<20} {up:>8.0f} ({up / scp_up:4.2f}x) {down:>8.0f} ({down / scp_down:4.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
