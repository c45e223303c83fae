"""Imported bundles trusted no further than a device, through the real `hub` and real runs in
the real ONNX Runtime image (issue 36).

- A bundle whose compiled model was swapped, every hash in it rewritten to match, imports
  marked ``imported_from``; a compile of the same model here is not served from it (a store
  where the mark is taken out by hand does serve it: the case is real), and ``--from-run``
  refuses it in one line.
- Deflate bombs: a 1 GiB member behind a manifest that declares 100 bytes, or declared honestly
  over the cap, is refused before it is written (the import runs under a 16 MiB limit on the
  size of any file it writes, so a write past it would fail differently).
- Runs checked field by field: a time of 1e308, an id that is another run's short id, an
  artifact at ``runs.db``, NaN metrics and malformed rows: each refused in one line, exit 2.
- `hub runs delete` removes a run with its children and the files only it kept; asks, or
  takes --yes; refuses ambiguous prefixes; recovers a store an older release let a 1e308 run
  into.
- The store's files are 0600 and its folders 0700 under umask 022, unless
  EDGEHUB_STORE_MODE=umask.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import sys
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
MANIFEST = "edgehub-bundle.json"
FILE_LIMIT = 16 << 20


def _limits() -> None:
    os.umask(0o022)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def hub(
    cwd: Path, *args: str, env: dict[str, str] | None = None, limited: bool = False
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
        preexec_fn=_limits if limited else lambda: os.umask(0o022),
    )  # fmt: skip


def project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "hub.toml").write_text(f'[project]\nname = "{folder.name}"\nstore = ".hub"\n')
    (folder / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    return folder


def refused(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    """Exit 2, one line on stderr naming the bundle refused and each of ``expected``."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(lines) == 1, lines
    for text in expected:
        assert text in lines[0], lines
    assert "Traceback" not in done.stderr and "check the file system" not in done.stderr


def store_state(root: Path) -> tuple[list[str], list[Any]]:
    store = root / ".hub"
    files = sorted(
        str(p.relative_to(store)) for p in store.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    )  # fmt: skip
    with sqlite3.connect(store / "runs.db") as conn:
        rows = [
            sorted(map(repr, conn.execute(f"SELECT * FROM {t}"))) for t in ("runs", "artifacts")
        ]
    return files, rows


@pytest.fixture(scope="module")
def source(ort_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Store A with a real compile run, and its bundle."""
    root = project(tmp_path_factory.mktemp("trust") / "a")
    done = hub(root, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    bundle = root.parent / "a.tar"
    assert hub(root, "runs", "export", run_id, "-o", str(bundle)).returncode == 0
    return {"root": root, "run_id": run_id, "bundle": bundle}


def members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def consistent(bundle: Path, out: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """``bundle`` changed by ``change`` (on its files but the manifest), its manifest rewritten
    to match every change: what a sender who wants it to pass would make."""
    files = members(bundle)
    manifest = json.loads(files.pop(MANIFEST))
    change(files)
    manifest["files"] = {
        n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in files.items()
    }
    manifest["runs"] = sorted(n[5:-5] for n in files if n.startswith("runs/"))
    with tarfile.open(out, "w") as tar:
        for name, data in [(MANIFEST, json.dumps(manifest).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def edit_run(run_id: str, edit: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    def change(files: dict[str, bytes]) -> None:
        rows = json.loads(files[f"runs/{run_id}.json"])
        edit(rows)
        files[f"runs/{run_id}.json"] = json.dumps(rows).encode()

    return change


def swap_compiled_model(run_id: str) -> Callable[[dict[str, bytes]], None]:
    def change(files: dict[str, bytes]) -> None:
        rows = json.loads(files[f"runs/{run_id}.json"])
        (entry,) = [a for a in rows["artifacts"] if a["name"] == "path"]
        old = f"artifacts/{entry['sha256']}/{entry['file_name']}"
        swapped = EXAMPLE.read_bytes() + b"\0" * 64  # another model under the compiled name
        sha = hashlib.sha256(swapped).hexdigest()
        del files[old]
        files[f"artifacts/{sha}/{entry['file_name']}"] = swapped
        entry.update(sha256=sha, size=len(swapped), path=f"artifacts/{sha}/{entry['file_name']}")
        files[f"runs/{run_id}.json"] = json.dumps(rows).encode()

    return change


def shown(root: Path, ref: str) -> dict[str, Any]:
    done = hub(root, "runs", "show", ref, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def compile_here(root: Path) -> dict[str, Any]:
    done = hub(root, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", "--json")
    assert done.returncode == 0, done.stderr
    return shown(root, json.loads(done.stdout)["run_id"])


def test_a_swapped_compiled_model_is_marked_never_a_cache_hit_nor_from_run(
    source: dict[str, Any], tmp_path: Path
) -> None:
    run_id = source["run_id"]
    bad = consistent(source["bundle"], tmp_path / "swapped.tar", swap_compiled_model(run_id))
    marked, unmarked = project(tmp_path / "b"), project(tmp_path / "c")
    for root in (marked, unmarked):
        done = hub(root, "runs", "import", str(bad))
        assert done.returncode == 0 and "imported 1 runs" in done.stdout, done.stderr
    assert shown(marked, run_id)["tags"]["imported_from"].startswith("swapped.tar, ")
    # --from-run refuses it, by id and as the latest compile, in one line
    for ref in (run_id[:8], "latest"):
        done = hub(marked, "exec", "invoke", "onnxruntime", "--from-run", ref)
        assert done.returncode == 2 and "was imported from a bundle" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    # the same model compiled here builds: the imported run is no cache hit
    built = compile_here(marked)
    assert "cached_from" not in built["tags"]
    assert not json.loads(hub(marked, "runs", "list", "--cached", "--json").stdout)
    # the case is real: with the mark taken out by hand, the swapped model would be served
    with sqlite3.connect(unmarked / ".hub" / "runs.db") as conn:
        conn.execute("DELETE FROM tags WHERE name = 'imported_from'")
    assert compile_here(unmarked)["tags"].get("cached_from") == run_id


def _bomb_tar(size: int, declared: int, manifest_first: bool = True, zstd: bool = False) -> bytes:
    """A gzip (or zstd) bundle holding a member of ``size`` zero bytes whose manifest declares
    ``declared``, compressed as it is written (about 1 MiB per GiB)."""
    name = f"artifacts/{'0' * 64}/model.onnx"
    manifest = json.dumps({
        "format": "edgehub-bundle", "version": 1, "runs": [],
        "files": {name: {"sha256": "0" * 64, "size": declared}},
    }).encode()  # fmt: skip
    squeeze: Any = zlib.compressobj(9, zlib.DEFLATED, 31)
    if zstd:
        squeeze = pytest.importorskip("zstandard").ZstdCompressor(level=3).compressobj()
    out = [squeeze.compress(b"")]

    def add(info: tarfile.TarInfo, data: bytes | None = None) -> None:
        out.append(squeeze.compress(info.tobuf(tarfile.PAX_FORMAT)))
        if data is not None:
            out.append(squeeze.compress(data + b"\0" * (-len(data) % 512)))

    head = tarfile.TarInfo(MANIFEST)
    head.size = len(manifest)
    if manifest_first:
        add(head, manifest)
    info = tarfile.TarInfo(name)
    info.size = size
    add(info)
    zeros = bytes(1 << 20)
    for _ in range(size >> 20):
        out.append(squeeze.compress(zeros))
    if not manifest_first:
        add(head, manifest)
    out.append(squeeze.compress(b"\0" * 10240) + squeeze.flush())
    return b"".join(out)


@pytest.mark.parametrize(
    ("case", "env", "expected"),
    [
        ("lying manifest", {}, "its manifest says 100"),
        ("lying manifest, last", {}, "its manifest says 100"),
        ("over the cap", {"EDGEHUB_BUNDLE_MAX_BYTES": "64M"}, "over 64 MiB"),
        ("zstd, lying manifest", {}, "its manifest says 100"),
    ],
)
def test_a_deflate_bomb_is_refused_before_it_is_written(
    source: dict[str, Any], tmp_path: Path, case: str, env: dict[str, str], expected: str
) -> None:
    size = 1 << 30
    declared = size if case == "over the cap" else 100
    zstd = case.startswith("zstd")
    bomb = tmp_path / ("bomb.tar.zst" if zstd else "bomb.tar.gz")
    bomb.write_bytes(_bomb_tar(size, declared, manifest_first="last" not in case, zstd=zstd))
    assert bomb.stat().st_size < 2 << 20
    if not zstd:
        with gzip.open(bomb) as stream:
            assert stream.read(512)
    target = project(tmp_path / "b")
    assert hub(target, "runs", "list").returncode == 0
    before = store_state(target)
    done = hub(target, "runs", "import", str(bomb), env=env, limited=True)
    refused(done, "refusing bundle", expected)
    assert "too large" not in done.stderr.lower()  # nothing got near the 16 MiB write limit
    assert store_state(target) == before


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(rows: dict[str, Any]) -> None:
        where: Any = rows
        keys = path.split(".")
        for key in keys[:-1]:
            where = where[int(key)] if isinstance(where, list) else where[key]
        last = keys[-1]
        if isinstance(where, list):
            where[int(last)] = value
        else:
            where[last] = value

    return edit


def _rename(new_id: str) -> Callable[[dict[str, bytes]], None]:
    """The bundle's one run under another id (its rows and artifact ids changed to match)."""

    def change(files: dict[str, bytes]) -> None:
        (name,) = [n for n in files if n.startswith("runs/")]
        old = name[5:-5]
        text = files.pop(name).decode().replace(old, new_id)
        rows = json.loads(text)
        for number, artifact in enumerate(rows["artifacts"]):
            artifact["id"] = f"{number:032x}"
        files[f"runs/{new_id}.json"] = json.dumps(rows).encode()

    return change


def _metric(value: Any) -> Callable[[str], Callable[..., None]]:
    return lambda r: edit_run(r, lambda rows: rows["metrics"].append([r, "m", None, value, 1.7e9]))


def _sha_none_at_db(rows: dict[str, Any]) -> None:
    rows["artifacts"][0].update(sha256=None, path="runs.db")


MALFORMED: dict[str, tuple[Callable[[str], Callable[..., None]], tuple[str, ...]]] = {
    "started_at 1e308": (lambda r: edit_run(r, _set("run.started_at", 1e308)), ("started_at",)),
    "ended before start": (lambda r: edit_run(r, _set("run.ended_at", 1e9)), ("ended_at",)),
    "short id": (lambda r: _rename(r[:8]), ("not a run id",)),
    "stored at runs.db": (
        lambda r: edit_run(r, _set("artifacts.0.path", "runs.db")), ("outside the store",),
    ),
    "path at runs.db": (lambda r: edit_run(r, _sha_none_at_db), ("outside the store",)),
    "NaN metric": (_metric(float("nan")), ("not a finite number",)),
    "string metric": (_metric("fast"), ("not a number",)),
    "huge pid": (lambda r: edit_run(r, _set("run.pid", 2**70)), ("pid",)),
    "negative size": (lambda r: edit_run(r, _set("artifacts.0.size", -1)), ("size",)),
    "short param row": (
        lambda r: edit_run(r, lambda rows: rows["params"].append([r, "x"])), ("params",),
    ),
    "twice a tag": (
        lambda r: edit_run(r, lambda rows: rows["tags"].extend([[r, "t", "1"], [r, "t", "2"]])),
        ("twice",),
    ),
    "run not a dict": (lambda r: edit_run(r, _set("run", [1, 2])), ("no run record",)),
    "artifact folder ..": (lambda r: edit_run(r, _set("run.artifact_dir", "runs/..")), ("folder",)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_run_is_refused_in_one_line(
    source: dict[str, Any], tmp_path: Path, case: str
) -> None:
    make, expected = MALFORMED[case]
    target = project(tmp_path / "b")
    assert hub(target, "runs", "import", str(source["bundle"])).returncode == 0
    before = store_state(target)
    bad = consistent(source["bundle"], tmp_path / "bad.tar", make(source["run_id"]))
    refused(hub(target, "runs", "import", str(bad)), "refusing bundle", *expected)
    assert store_state(target) == before
    assert shown(target, source["run_id"][:8])["run_id"] == source["run_id"]  # not shadowed
    assert hub(target, "runs", "list").returncode == 0


def test_runs_delete_removes_a_run_and_what_only_it_kept(
    source: dict[str, Any], tmp_path: Path
) -> None:
    run_id = source["run_id"]
    twin = run_id[:8] + ("0" * 24 if run_id[8:] != "0" * 24 else "1" * 24)
    target = project(tmp_path / "b")
    assert hub(target, "runs", "import", str(source["bundle"])).returncode == 0
    done = hub(
        target,
        "runs",
        "import",
        str(consistent(source["bundle"], tmp_path / "t.tar", _rename(twin))),
    )
    assert done.returncode == 0, done.stderr  # an id sharing a prefix, not one: no shadow
    ambiguous = hub(target, "runs", "delete", run_id[:8], "--yes")
    assert ambiguous.returncode != 0 and "ambiguous" in ambiguous.stderr
    asked = hub(target, "runs", "delete", run_id)
    refused(asked, "pass --yes")
    assert shown(target, run_id)["run_id"] == run_id
    stored = {a["sha256"] for a in shown(target, run_id)["artifacts"] if a["sha256"]}
    done = hub(target, "runs", "delete", run_id, "--yes")
    assert done.returncode == 0 and "deleted 1 runs" in done.stdout, done.stderr
    assert hub(target, "runs", "show", run_id).returncode != 0
    assert shown(target, run_id[:8])["run_id"] == twin  # the prefix is the twin's alone now
    for sha in stored:  # the twin shares every stored file: still there
        assert (target / ".hub" / "artifacts" / sha).is_dir()
    assert hub(target, "runs", "delete", twin, "--yes").returncode == 0
    for sha in stored:
        assert not (target / ".hub" / "artifacts" / sha).exists()
    # a store an older release let a run of 1e308 into: listed, and deleted
    with sqlite3.connect(target / ".hub" / "runs.db") as conn:
        conn.execute(
            "INSERT INTO runs (id, project, name, type, status, started_at) VALUES"
            " (?, 'b', 'bad', 'COMPILE', 'FINISHED', 1e308)",
            ("f" * 32,),
        )
    listed = hub(target, "runs", "list")
    assert listed.returncode == 0 and "ffffffff" in listed.stdout, listed.stderr
    assert hub(target, "runs", "delete", "ffff", "--yes").returncode == 0
    assert "ffffffff" not in hub(target, "runs", "list").stdout


def _modes(store: Path) -> tuple[set[int], set[int]]:
    dirs, files = {stat.S_IMODE(store.stat().st_mode)}, set()
    for path in store.rglob("*"):
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            dirs.add(stat.S_IMODE(info.st_mode))
        elif stat.S_ISREG(info.st_mode):
            files.add(stat.S_IMODE(info.st_mode))
    return dirs, files


def test_the_store_is_private_whatever_the_umask(source: dict[str, Any], tmp_path: Path) -> None:
    root = project(tmp_path / "b")
    compile_here(root)  # under umask 022 (`hub` runs with it)
    assert hub(root, "runs", "import", str(source["bundle"])).returncode == 0
    dirs, files = _modes(root / ".hub")
    assert dirs == {0o700}, sorted(map(oct, dirs))
    assert files <= {0o600, 0o700} and files, sorted(map(oct, files))
    # a store an older release made: its folder made private when it is next opened
    (root / ".hub").chmod(0o755)
    (root / ".hub" / "runs.db").chmod(0o644)
    assert hub(root, "runs", "list").returncode == 0
    assert stat.S_IMODE((root / ".hub").stat().st_mode) == 0o700
    assert stat.S_IMODE((root / ".hub" / "runs.db").stat().st_mode) == 0o600
    # configured otherwise: the umask's modes
    shared = project(tmp_path / "c")
    assert (
        hub(
            shared, "runs", "import", str(source["bundle"]), env={"EDGEHUB_STORE_MODE": "umask"}
        ).returncode
        == 0
    )
    dirs, files = _modes(shared / ".hub")
    assert 0o755 in dirs and 0o644 in files
    bad = hub(shared, "runs", "list", env={"EDGEHUB_STORE_MODE": "open"})
    assert bad.returncode == 2 and "EDGEHUB_STORE_MODE" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
