"""`hub runs export` / `hub runs import` through the real `hub` entry point, with real runs made
in the real ONNX Runtime image: a profile, a pipeline (a compile with a profile and an
invoke as its child runs, plus the reference invoke) and an A/B run (two profiles as its
children, compared by its paired rounds).

- Round trip between two stores in tmp dirs (plain tar and gzip): every run's
  `runs show --json` is the same there except the store's own path, `runs compare` prints the
  same; the bundle holds no absolute host path; importing twice changes nothing.
- Hostile bundles, made from the real one (a tampered file, a tampered artifact with its
  manifest entry updated, `..`, an absolute name, a symlink, a hard link, a FIFO, a device, an
  oversized member, too many members, an artifact row pointing outside the store): each is
  refused in one line with exit 2, and the target store's files and rows are as before.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def hub(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def project(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "hub.toml").write_text(f'[project]\nname = "{name}"\nstore = ".hub"\n')
    return folder


@pytest.fixture(scope="module")
def source(ort_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Store A with real runs, and its bundle."""
    root = project(tmp_path_factory.mktemp("bundles") / "a", "a")
    (root / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    for step in ("profile", "pipeline"):
        done = hub(root, "exec", step, "onnxruntime", "tiny_cnn.onnx")
        assert done.returncode == 0, done.stderr
    model = ["tiny_cnn.onnx", "tiny_cnn.onnx", "--rounds", "6"]
    done = hub(root, "exec", "ab", "onnxruntime", *model)
    assert done.returncode in (0, 5), done.stderr
    listed = json.loads(hub(root, "runs", "list", "--json").stdout)
    ids = [r["run_id"] for r in listed]
    roots = [r["run_id"] for r in listed if r["parent_run_id"] is None]
    assert len(ids) >= 5 and len(roots) < len(ids)  # a pipeline's steps are child runs
    bundle = root.parent / "runs.tar"
    done = hub(root, "runs", "export", *[i[:8] for i in roots], "-o", str(bundle))
    assert done.returncode == 0, done.stderr
    return {"root": root, "ids": ids, "bundle": bundle, "listed": listed}


def snapshot(root: Path) -> tuple[list[tuple[str, int]], list[Any]]:
    """The store's files (name, size) and every row of every table."""
    store = root / ".hub"
    files = sorted(
        (str(p.relative_to(store)), p.stat().st_size)
        for p in store.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    )
    with sqlite3.connect(store / "runs.db") as conn:
        rows = [
            (table, sorted(map(repr, conn.execute(f"SELECT * FROM {table}"))))
            for table in ("runs", "params", "metrics", "artifacts", "tags", "environment")
        ]
    return files, rows


def shown(root: Path, run_id: str) -> str:
    """`runs show --json` with the local paths (the store, the project folder) taken out, and
    the tag an import sets (where this store got the run: not part of the run)."""
    data = json.loads(hub(root, "runs", "show", run_id, "--json").stdout)
    data["tags"].pop("imported_from", None)
    text = json.dumps(data, indent=1, sort_keys=True)
    return text.replace(str(root / ".hub"), "STORE").replace(f"{root}/", "")


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz"])
def test_round_trip_gives_the_same_runs_and_comparison(
    source: dict[str, Any], tmp_path: Path, suffix: str
) -> None:
    bundle = source["bundle"]
    if suffix != ".tar":
        bundle = tmp_path / f"runs{suffix}"
        roots = [r["run_id"] for r in source["listed"] if r["parent_run_id"] is None]
        assert hub(source["root"], "runs", "export", *roots, "-o", str(bundle)).returncode == 0
        assert bundle.read_bytes()[:2] == b"\x1f\x8b"
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        texts = [tar.extractfile(m).read() for m in tar.getmembers() if m.name.endswith(".json")]  # type: ignore[union-attr]
    assert any(n.startswith("images/edgehub-onnxruntime_") for n in names)
    assert all(str(source["root"]).encode() not in t for t in texts)  # no host path inside
    target = project(tmp_path / "b", "b")
    done = hub(target, "runs", "import", str(bundle))
    assert done.returncode == 0, done.stderr
    assert f"imported {len(source['ids'])} runs" in done.stdout
    for run_id in source["ids"]:
        assert shown(target, run_id) == shown(source["root"], run_id)
    profiles = [r for r in source["listed"] if r["run_type"] == "PROFILE"]
    ab = [r["run_id"] for r in profiles if r["name"].startswith("ab ")]
    assert len(ab) == 2  # the A/B run's profiles: compared by its paired rounds
    pairs = [ab, [r["run_id"] for r in profiles if r["run_id"] not in ab]]
    for pair, flag in itertools.product(pairs, ([], ["--json"])):
        there = hub(target, "runs", "compare", *pair, *flag)
        here = hub(source["root"], "runs", "compare", *pair, *flag)
        assert there.returncode == here.returncode and there.stdout == here.stdout
        assert "paired rounds" in there.stdout or pair != ab or flag
    before = snapshot(target)
    again = hub(target, "runs", "import", str(bundle))
    assert again.returncode == 0 and "imported 0 runs" in again.stdout
    assert snapshot(target) == before


def _rewrite(
    bundle: Path,
    out: Path,
    change: Callable[[tarfile.TarFile, list[tuple[tarfile.TarInfo, bytes]]], None],
) -> Path:
    with tarfile.open(bundle) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]  # type: ignore[union-attr]
    with tarfile.open(out, "w") as tar:
        change(tar, members)
        for member, data in members:
            tar.addfile(member, io.BytesIO(data))
    return out


def _extra(kind: str, name: str = "artifacts/x", link: str = "") -> Callable[..., None]:
    def change(tar: tarfile.TarFile, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind.encode() if kind != "file" else tarfile.REGTYPE
        info.linkname = link
        tar.addfile(info, io.BytesIO(b"") if kind == "file" else None)

    return change


def _tamper(member_end: str, manifest_too: bool, new: bytes | None = None) -> Callable[..., None]:
    def change(tar: tarfile.TarFile, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
        index = next(
            i
            for i, (m, _) in enumerate(members)
            if m.name.endswith(member_end) and m.name != "edgehub-bundle.json"  # written first
        )
        member, data = members[index]
        changed = new(data) if callable(new) else (data[:-1] + bytes([data[-1] ^ 1]))
        member.size = len(changed)
        members[index] = (member, changed)
        if manifest_too:
            m_index = next(i for i, (m, _) in enumerate(members) if m.name == "edgehub-bundle.json")
            manifest_member, raw = members[m_index]
            manifest = json.loads(raw)
            manifest["files"][member.name] = {
                "sha256": hashlib.sha256(changed).hexdigest(),
                "size": len(changed),
            }
            text = json.dumps(manifest).encode()
            manifest_member.size = len(text)
            members[m_index] = (manifest_member, text)

    return change


def _unchanged(tar: tarfile.TarFile, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    """The real bundle as it is: refused by a lowered limit."""


def _outside_path(data: bytes) -> bytes:
    rows = json.loads(data)
    rows["artifacts"][0]["path"] = "/etc/passwd"
    return json.dumps(rows).encode()


LINK = "is a link"

HOSTILE: dict[str, tuple[Callable[..., None], dict[str, str], str]] = {
    "hash mismatch": (_tamper(".onnx", manifest_too=False), {}, "does not match its hash"),
    "artifact retagged": (_tamper(".onnx", manifest_too=True), {}, "does not match its hash"),
    "traversal": (_extra("file", "artifacts/../../evil"), {}, "leaves the bundle"),
    "absolute": (_extra("file", "/tmp/edgehub-evil"), {}, "absolute path"),
    "symlink": (_extra(tarfile.SYMTYPE.decode(), "runs/l.json", "/etc/passwd"), {}, LINK),
    "hardlink": (_extra(tarfile.LNKTYPE.decode(), "runs/h.json", "edgehub-bundle.json"), {}, LINK),
    "fifo": (_extra(tarfile.FIFOTYPE.decode()), {}, "device or FIFO"),
    "device": (_extra(tarfile.CHRTYPE.decode()), {}, "device or FIFO"),
    "oversized": (_unchanged, {"EDGEHUB_BUNDLE_MAX_MEMBER_BYTES": "1K"}, "over the limit"),
    "too many": (_unchanged, {"EDGEHUB_BUNDLE_MAX_MEMBERS": "4"}, "more than 4"),
    "row outside store": (
        _tamper(".json", manifest_too=True, new=_outside_path),  # type: ignore[arg-type]
        {},
        "outside the store",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_bundle_is_refused_and_the_store_unchanged(
    source: dict[str, Any], tmp_path: Path, case: str
) -> None:
    change, env, expected = HOSTILE[case]
    target = project(tmp_path / "b", "b")
    assert hub(target, "runs", "list").returncode == 0  # the store exists
    before = snapshot(target)
    bad = _rewrite(source["bundle"], tmp_path / "bad.tar", change)
    done = hub(target, "runs", "import", str(bad), env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing bundle" in lines[0] and expected in lines[0], lines
    assert "Traceback" not in done.stderr
    assert snapshot(target) == before
    assert not (tmp_path / "edgehub-evil").exists() and not Path("/tmp/edgehub-evil").exists()


def _renamed(data: bytes) -> bytes:
    rows = json.loads(data)
    rows["run"]["name"] = "someone else's run"
    return json.dumps(rows).encode()


def test_a_run_already_here_with_other_records_refuses_the_import(
    source: dict[str, Any], tmp_path: Path
) -> None:
    target = project(tmp_path / "b", "b")
    assert hub(target, "runs", "import", str(source["bundle"])).returncode == 0
    before = snapshot(target)
    changed = _rewrite(
        source["bundle"],
        tmp_path / "changed.tar",
        _tamper(".json", True, new=_renamed),  # type: ignore[arg-type]
    )
    done = hub(target, "runs", "import", str(changed))
    assert done.returncode == 2 and "already in this store with different records" in done.stderr
    assert snapshot(target) == before


def test_secrets_and_host_paths_stay_out_of_the_bundle(ort_image: str, tmp_path: Path) -> None:
    root = project(tmp_path / "c", "c")
    (root / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    done = hub(
        root, "exec", "profile", "onnxruntime", "tiny_cnn.onnx",
        "--tag", "api_token=s3cret-value", "--tag", "team=edge",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bundle = tmp_path / "one.tar"
    done = hub(root, "runs", "export", "latest", "-o", str(bundle))
    assert done.returncode == 0 and "left out 1 entries named like secrets" in done.stdout
    raw = bundle.read_bytes()
    assert b"s3cret-value" not in raw and b"edge" in raw
    assert str(root).encode() not in raw and str(Path.home()).encode() + b"/" not in raw
    target = project(tmp_path / "d", "d")
    assert hub(target, "runs", "import", str(bundle)).returncode == 0
    tags = json.loads(hub(target, "runs", "show", "latest", "--json").stdout)["tags"]
    assert tags.get("team") == "edge" and "api_token" not in tags


def test_zstd_bundles_round_trip_and_are_checked(source: dict[str, Any], tmp_path: Path) -> None:
    """`-o runs.tar.zst` where the zstandard module is installed: the same runs arrive, a
    bundle that decompresses past the limit or holds a link is refused, and without the module
    both directions say so in one line."""
    zstandard = pytest.importorskip("zstandard", reason="needs the zstandard module")
    roots = [r["run_id"] for r in source["listed"] if r["parent_run_id"] is None]
    bundle = tmp_path / "runs.tar.zst"
    done = hub(source["root"], "runs", "export", *roots, "-o", str(bundle))
    assert done.returncode == 0, done.stderr
    assert bundle.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    target = project(tmp_path / "b", "b")
    done = hub(target, "runs", "import", str(bundle))
    assert done.returncode == 0, done.stderr
    for run_id in source["ids"]:
        assert shown(target, run_id) == shown(source["root"], run_id)
    before = snapshot(target)
    symlink = _extra(tarfile.SYMTYPE.decode(), "runs/l.json", "/etc/passwd")
    linked = _rewrite(source["bundle"], tmp_path / "linked.tar", symlink)
    for name, data, env, expected in (
        ("bomb.tar.zst", bytes(8 << 20),
         {"EDGEHUB_BUNDLE_MAX_BYTES": "1K", "EDGEHUB_BUNDLE_MAX_MEMBERS": "10"},
         "decompresses to more than"),
        ("linked.tar.zst", linked.read_bytes(), {}, "is a link"),
    ):  # fmt: skip
        hostile = tmp_path / name
        hostile.write_bytes(zstandard.ZstdCompressor().compress(data))
        refused = hub(target, "runs", "import", str(hostile), env=env)
        assert refused.returncode == 2 and expected in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        assert snapshot(target) == before
    blocked = tmp_path / "no-zstd"
    blocked.mkdir()
    (blocked / "zstandard.py").write_text("raise ImportError('not installed here')\n")
    env = {"PYTHONPATH": str(blocked)}
    for args in (["export", roots[0], "-o", str(tmp_path / "x.tar.zst")], ["import", str(bundle)]):
        done = hub(target if args[0] == "import" else source["root"], "runs", *args, env=env)
        assert done.returncode == 2 and "zstandard" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.tar.zst").exists()
