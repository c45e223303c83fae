"""Build the conformance corpus: real architectures exported to ONNX, each with a small
real-looking dataset, checked in ONNX Runtime, cached by content.

    python benchmarks/corpus/build.py                  # build (or find) the whole corpus
    python benchmarks/corpus/build.py --only yolov8n,bert
    python benchmarks/corpus/build.py --list           # the catalog
    python benchmarks/corpus/build.py --out DIR        # somewhere else than the cache

The models are made in a builder venv of their own, ``corpus-venv`` in edgehub's cache
folder (``$EDGEHUB_CACHE_DIR``, else ``$XDG_CACHE_HOME/edgehub`` or ``~/.cache/edgehub``),
created once from pinned packages: a CPU build of torch (installed from the wheel file on
this machine when there is one), transformers, onnx, onnxscript, onnxruntime and
scikit-image. Nothing is fetched at build time but those
packages: weights are random (``from_config``), images are scikit-image's bundled photos.

The corpus goes to ``corpus/<key>`` in that cache folder, where the key hashes this folder's
Python files, the pins and the Python version: a second run with nothing changed builds
nothing. Models are built in subprocesses (two at a time on two cores), so one failure only
costs that model; failures are listed and the exit status is 1. Progress goes to stderr; the
corpus folder is the one line on stdout. See README.md beside this file for the manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TORCH = "torch==2.13.0"
PINS = (
    TORCH,
    "transformers==5.23.0",
    "onnx==1.23.2",
    "onnxscript==0.7.2",
    "onnx-ir==1.1.0",
    "onnxruntime==1.31.1",
    "scikit-image==0.26.0",
    "numpy==2.4.6",
)
PYTHON = (3, 11)  # the CPU torch wheel's; any other Python gets torch from the index
WHEEL_GLOB = "torch-2.13.0+cpu-cp311-cp311-*.whl"
WHEEL_DIRS = ("/opt/wheels",)
STAMP = "edgehub-corpus.json"


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cache_root() -> Path:
    """edgehub's one cache folder (`edgehub.paths.cache_subdir`: made private and checked)."""
    from edgehub.paths import cache_subdir

    return cache_subdir()


def torch_wheel() -> Path | None:
    """The CPU torch wheel to install by path (no CUDA packages come with it), if present."""
    given = os.environ.get("EDGEHUB_TORCH_WHEEL")
    if given:
        return Path(given)
    for folder in WHEEL_DIRS:
        found = sorted(Path(folder).glob(WHEEL_GLOB)) if Path(folder).is_dir() else []
        if found:
            return found[-1]
    return None


def base_python() -> str:
    """A Python 3.11 for the venv (the CPU wheel's), else this one."""
    given = os.environ.get("EDGEHUB_CORPUS_PYTHON")
    if given:
        return given
    if sys.version_info[:2] == PYTHON:
        return sys.executable
    return shutil.which("python3.11") or sys.executable


def corpus_key() -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([PINS, list(PYTHON)]).encode())
    for path in sorted(HERE.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            file = Path(root, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def mib(count: int) -> str:
    return f"{count / 2**20:.1f} MiB"


def ensure_venv(venv: Path) -> dict[str, Any]:
    """The builder venv, created (or remade, when its pins changed) here. Returns its stamp:
    the pins, the seconds its creation took and its size."""
    python = venv / "bin" / "python"
    stamp_path = venv / STAMP
    wanted = {"pins": list(PINS), "python": base_python_version()}
    if stamp_path.is_file() and python.exists():
        stamp = json.loads(stamp_path.read_text())
        if {k: stamp.get(k) for k in wanted} == wanted:
            return stamp
        say(f"corpus: the builder venv {venv} has other pins; making it again")
    if venv.exists():
        shutil.rmtree(venv)
    wheel = torch_wheel()
    requirements = [str(wheel) if wheel else TORCH, *PINS[1:]]
    say(
        f"corpus: creating the builder venv {venv} (torch from "
        f"{wheel if wheel else 'the package index, with its CUDA dependencies'}) ..."
    )
    started = time.perf_counter()
    log = venv.with_suffix(".log")
    venv.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        for command in (
            [base_python(), "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--no-input", "--upgrade", "pip"],
            [str(python), "-m", "pip", "install", "--no-input", *requirements],
        ):
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT)
            if code:
                tail = log.read_text().splitlines()[-20:]
                shutil.rmtree(venv, ignore_errors=True)
                raise SystemExit(
                    f"corpus: making the builder venv failed (exit {code}); the end of {log}:\n"
                    + "\n".join("  | " + line for line in tail)
                )
    stamp = {
        **wanted,
        "torch_wheel": str(wheel) if wheel else None,
        "created_s": round(time.perf_counter() - started, 1),
        "bytes": folder_bytes(venv),
    }
    stamp_path.write_text(json.dumps(stamp, indent=1))
    say(f"corpus: builder venv ready in {stamp['created_s']} s, {mib(stamp['bytes'])}")
    return stamp


def base_python_version() -> str:
    out = subprocess.run(
        [base_python(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def worker(venv: Path, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["HF_HUB_OFFLINE"] = "1"  # nothing is loaded from a model hub
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "corpus.worker", *args],
        env=env,
        text=True,
        capture_output=True,
        **options,
    )


def read_catalog(venv: Path) -> list[dict[str, Any]]:
    result = worker(venv, "catalog")
    if result.returncode:
        raise SystemExit(f"corpus: reading the catalog failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout)


def valid_entries(out: Path) -> dict[str, dict[str, Any]]:
    """The manifest's entries whose model and dataset are there, model unchanged."""
    path = out / "manifest.json"
    if not path.is_file():
        return {}
    entries = {}
    for entry in json.loads(path.read_text()):
        model, dataset = out / entry["file"], out / entry["dataset"]
        if not (model.is_file() and dataset.is_file()):
            continue
        if hashlib.sha256(model.read_bytes()).hexdigest() == entry["sha256"]:
            entries[entry["name"]] = entry
    return entries


def failure_reason(log: str) -> str:
    """The last line that names an error, else the last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error:" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def build_one(
    venv: Path, name: str, out: Path, threads: int, timeout: int
) -> tuple[dict[str, Any] | None, str]:
    staging = out / ".staging" / name
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    log = out / "logs" / f"{name}.log"
    log.parent.mkdir(exist_ok=True)
    try:
        result = worker(
            venv, "build", name, "--out", str(staging), "--threads", str(threads), timeout=timeout
        )
        output, code = result.stdout + result.stderr, result.returncode
    except subprocess.TimeoutExpired as expired:  # its output comes as bytes, text=True or not
        parts = [
            p.decode(errors="replace") if isinstance(p, bytes) else p or ""
            for p in (expired.stdout, expired.stderr)
        ]
        output, code = "".join(parts) + f"\nTimeoutError: no model after {timeout} s", -1
    log.write_text(output)
    entry_path = staging / f"{name}.entry.json"
    if code or not entry_path.is_file():
        shutil.rmtree(staging, ignore_errors=True)
        return None, f"{failure_reason(log.read_text())} (log: {log})"
    entry = json.loads(entry_path.read_text())
    for key in ("file", "dataset"):
        os.replace(staging / entry[key], out / entry[key])
    shutil.rmtree(staging, ignore_errors=True)
    return entry, ""


def write_json(path: Path, value: Any) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(value, indent=1) + "\n")
    os.replace(temporary, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated model names (default: all)")
    parser.add_argument("--out", type=Path, help="corpus folder (default: the cache, by key)")
    parser.add_argument("--list", action="store_true", help="print the catalog and stop")
    parser.add_argument("--force", action="store_true", help="rebuild models already built")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=int, default=900, help="seconds per model")
    args = parser.parse_args(argv)

    key = corpus_key()
    out = (args.out or cache_root() / "corpus" / key).resolve()
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    entries = {} if args.force else valid_entries(out)
    info_path = out / "build.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    if not args.list and not args.force and info.get("key") == key:
        wanted = only or info.get("catalog") or []
        if wanted and all(name in entries for name in wanted):
            say(f"corpus: up to date ({len(entries)} models, key {key})")
            print(out)
            return 0

    started = time.perf_counter()
    venv = cache_root() / "corpus-venv"
    stamp = ensure_venv(venv)
    catalog = read_catalog(venv)
    names = [c["name"] for c in catalog]
    if args.list:
        for c in catalog:
            say(f"{c['name']:28} {c['family']:15} {c['exporter']:18} {','.join(c['features'])}")
        return 0
    unknown = sorted(set(only or []) - set(names))
    if unknown:
        raise SystemExit(f"corpus: no models named {', '.join(unknown)}; see --list")
    selected = [n for n in names if only is None or n in only]
    todo = [n for n in selected if n not in entries]
    out.mkdir(parents=True, exist_ok=True)
    say(f"corpus: building {len(todo)} of {len(selected)} models into {out}")
    threads = max(1, (os.cpu_count() or 1) // max(1, args.jobs))
    failures: dict[str, str] = {}
    families = {c["name"]: c for c in catalog}

    def run(name: str) -> None:
        entry, reason = build_one(venv, name, out, threads, args.timeout)
        spec = families[name]
        if entry is None:
            failures[name] = reason
            say(f"  FAIL {name:28} {reason}")
            return
        entries[name] = entry
        say(
            f"  ok   {name:28} {spec['family']:15} {spec['exporter']:18} "
            f"{mib(entry['bytes']):>9}  {entry['build_s']:5.1f} s"
        )

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(run, todo))
    shutil.rmtree(out / ".staging", ignore_errors=True)

    manifest = [entries[n] for n in names if n in entries]
    write_json(out / "manifest.json", manifest)
    elapsed = time.perf_counter() - started
    corpus_bytes = sum((out / e[k]).stat().st_size for e in manifest for k in ("file", "dataset"))
    write_json(
        info_path,
        {
            "key": key,
            "pins": list(PINS),
            "python": stamp.get("python"),
            "torch_wheel": stamp.get("torch_wheel"),
            "catalog": names,
            "failures": failures,
            "venv": str(venv),
            "venv_created_s": stamp.get("created_s"),
            "venv_bytes": stamp.get("bytes"),
            "build_s": round(elapsed, 1),
            "models": len(manifest),
            "corpus_bytes": corpus_bytes,
        },
    )
    say(
        f"corpus: {len(todo) - len(failures)} built, {len(failures)} failed, "
        f"{len(manifest)} in the manifest; {elapsed:.1f} s; corpus {mib(corpus_bytes)}, "
        f"builder venv {mib(stamp.get('bytes') or 0)}"
    )
    for name, reason in failures.items():
        say(f"corpus: FAILED {name}: {reason}")
    if args.out is None:  # the cache keeps the current key's corpus only
        for old in out.parent.iterdir():
            if old != out and (old / "build.json").is_file():
                shutil.rmtree(old, ignore_errors=True)
                say(f"corpus: removed the outdated corpus {old}")
    print(out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
