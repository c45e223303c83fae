"""What goes to Device Farm for one benchmark: the test package (``benchmark_model`` and the
model in one ``.tgz``) and the test spec that runs it with ``adb``, leaving its log in
``$DEVICEFARM_LOG_DIR``. Both are byte for byte the same from the same inputs, so their content
hash names the upload and a second profile of the same model and binary uploads nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgehub.errors import ModelError, UsageError
from edgehub.toolchains.tflite.benchmark_params import BENCHMARK_KEYS

DEVICE_DIR = "/data/local/tmp/edgehub"
LOG_NAME = "benchmark.log"
EXIT_NAME = "benchmark.exit"
DEVICE_INFO_NAME = "edgehub-device.txt"
# benchmark_model flags edgehub sets itself: the model's place and the op profile in the log
FORCED = {
    "graph": f"{DEVICE_DIR}/model.tflite",
    "enable_op_profiling": "true",
    "op_profiling_output_mode": "stdout",
}
DROPPED = ("op_profiling_output_file",)  # stdout mode writes no file
_VALUE = re.compile(r"[A-Za-z0-9._,:/=+-]{1,256}")
_ELF_MACHINE_AARCH64 = 183
_PROPS = (
    "ro.product.manufacturer",
    "ro.product.model",
    "ro.build.version.release",
    "ro.product.cpu.abi",
    "ro.soc.model",
    "ro.hardware",
)


@dataclass(frozen=True)
class BenchmarkPlan:
    """The benchmark_model flags to run with, and what was overridden (for the info line)."""

    flags: dict[str, str]
    overridden: dict[str, str]


def check_arm64_binary(path: Path) -> None:
    """Refuse a ``benchmark_binary`` that is missing or not a 64-bit ARM ELF executable."""
    where = (
        "set benchmark_binary under [devices.NAME.aws] to LiteRT's benchmark_model for "
        "Android arm64"
    )
    if not str(path):
        raise UsageError(f"the aws provider needs benchmark_binary; {where}")
    try:
        with path.open("rb") as handle:
            head = handle.read(20)
    except FileNotFoundError:
        raise UsageError(f"benchmark_binary {path} does not exist; {where}") from None
    except OSError as error:
        raise UsageError(
            f"benchmark_binary {path} cannot be read ({error.strerror}); {where}"
        ) from None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise UsageError(f"benchmark_binary {path} is not an ELF executable; {where}")
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    if head[4] != 2 or machine != _ELF_MACHINE_AARCH64:
        bits = "64" if head[4] == 2 else "32"
        raise UsageError(
            f"benchmark_binary {path} is a {bits}-bit ELF for machine {machine}, not arm64 "
            f"(aarch64, machine {_ELF_MACHINE_AARCH64}); {where}"
        )


def plan_benchmark(params: Mapping[str, Any] | None) -> BenchmarkPlan:
    """The flags for ``params`` (benchmark_model's documented keys only, plain values), with
    the forced ones set over the user's."""
    flags: dict[str, str] = {}
    overridden: dict[str, str] = {}
    for key, raw in (params or {}).items():
        name = str(key).lstrip("-")
        if name not in BENCHMARK_KEYS:
            raise UsageError(
                f"benchmark_params {key!r} is not a flag of LiteRT's benchmark_model (allowed: "
                "its documented flags, e.g. num_threads, num_runs, warmup_runs, use_gpu, use_nnapi)"
            )
        value = str(raw).lower() if isinstance(raw, bool) else str(raw)
        if not _VALUE.fullmatch(value):
            raise UsageError(
                f"benchmark_params {name}={value!r}: values may hold letters, digits and . , : / "
                "= + - only (they go on the phone's command line)"
            )
        if name in FORCED or name in DROPPED:
            overridden[name] = value
            continue
        flags[name] = value
    flags.update(FORCED)
    return BenchmarkPlan(flags=flags, overridden=overridden)


def _tar_member(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def build_test_package(binary: Path, model: Path) -> tuple[bytes, str]:
    """The test package (an npm-style ``.tgz``) and its sha256."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        meta = {"name": "edgehub-benchmark", "version": "1.0.0", "private": True}
        _tar_member(tar, "package/package.json", json.dumps(meta).encode(), 0o644)
        _tar_member(tar, "package/benchmark_model", binary.read_bytes(), 0o755)
        _tar_member(tar, "package/model.tflite", model.read_bytes(), 0o644)
    data = gzip.compress(raw.getvalue(), mtime=0)
    return data, hashlib.sha256(data).hexdigest()


def build_test_spec(plan: BenchmarkPlan) -> tuple[bytes, str]:
    """The test spec (YAML) running the benchmark with ``plan``'s flags, and its sha256."""
    adb = 'adb -s "$DEVICEFARM_DEVICE_UDID"'
    package = '"$DEVICEFARM_TEST_PACKAGE_PATH"/package'
    args = " ".join(f"--{k}={v}" for k, v in sorted(plan.flags.items()))
    props = "; ".join(f"echo {p}=$({adb} shell getprop {p})" for p in _PROPS)
    commands = {
        "install": [
            'cd "$DEVICEFARM_TEST_PACKAGE_PATH" && '
            'for f in *.tgz; do [ -e "$f" ] && tar xzf "$f"; done; true'
        ],
        "pre_test": [
            f"{adb} shell rm -rf {DEVICE_DIR}",
            f"{adb} shell mkdir -p {DEVICE_DIR}",
            f"{adb} push {package}/benchmark_model {DEVICE_DIR}/benchmark_model",
            f"{adb} push {package}/model.tflite {DEVICE_DIR}/model.tflite",
            f"{adb} shell chmod 755 {DEVICE_DIR}/benchmark_model",
            f'({props}) > "$DEVICEFARM_LOG_DIR/{DEVICE_INFO_NAME}"',
        ],
        "test": [
            f"{adb} shell {DEVICE_DIR}/benchmark_model {args} "
            f'> "$DEVICEFARM_LOG_DIR/{LOG_NAME}" 2>&1; '
            f'echo $? > "$DEVICEFARM_LOG_DIR/{EXIT_NAME}"'
        ],
        "post_test": [f"{adb} shell rm -rf {DEVICE_DIR}"],
    }
    lines = ["version: 0.1", "# written by edgehub: LiteRT benchmark_model on one phone", "phases:"]
    for phase, steps in commands.items():
        lines += [f"  {phase}:", "    commands:"]
        lines += [f"      - {json.dumps(step)}" for step in steps]
    lines += ["artifacts:", "  - $DEVICEFARM_LOG_DIR", ""]
    data = "\n".join(lines).encode()
    return data, hashlib.sha256(data).hexdigest()


def model_file(path: Path) -> Path:
    """``path`` if it is a ``.tflite`` model file, else a `ModelError` saying so."""
    if path.suffix.lower() != ".tflite" or not path.is_file():
        raise ModelError(f"the aws provider profiles .tflite files; {path} is not one")
    return path
