"""Host side: build (and cache) the agent zipapp. Standard library only.

The archive holds the agent package as ``edgehub_agent/`` (without this module and without
``__pycache__``), a generated ``edgehub_agent/_build_info.py`` with the source hash, and a
top-level ``__main__.py``, so ``python edgehub-agent-<hash12>.pyz COMMAND ...`` runs it.
Builds are deterministic (sorted entries, fixed timestamps and modes): the same sources give the
same bytes. The file is written to a temporary name and renamed, so concurrent builds are safe.
"""

from __future__ import annotations

import functools
import hashlib
import os
import zipfile
from pathlib import Path

from .atomic import replacing

AGENT_DIR = Path(__file__).resolve().parent
PACKAGE_NAME = "edgehub_agent"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SHEBANG = b"#!/usr/bin/env python3\n"
EXCLUDED = frozenset({"bundle.py", "_build_info.py"})

MAIN = """\
import sys

from edgehub_agent.entry import main

sys.exit(main())
"""


def agent_sources(source_dir: Path | None = None) -> list[Path]:
    """The agent's .py files, in a deterministic order (POSIX relative paths, sorted)."""
    root = source_dir or AGENT_DIR
    files = [
        p
        for p in root.rglob("*.py")
        if "__pycache__" not in p.relative_to(root).parts and p.name != "_build_info.py"
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def agent_hash(source_dir: Path | None = None) -> str:
    """sha256 over every agent source file (this bundler included): names and contents.

    The installed sources' hash is computed once per process (they do not change under it)."""
    if source_dir is None or Path(source_dir).resolve() == AGENT_DIR:
        return _installed_hash()
    return _hash_sources(Path(source_dir))


@functools.lru_cache(maxsize=1)
def _installed_hash() -> str:
    return _hash_sources(AGENT_DIR)


def _hash_sources(root: Path) -> str:
    digest = hashlib.sha256()
    for path in agent_sources(root):
        data = path.read_bytes()
        name = path.relative_to(root).as_posix().encode()
        digest.update(len(name).to_bytes(4, "big") + name)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def default_cache_dir() -> Path:
    root = os.environ.get("EDGEHUB_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "edgehub"
    return base / "agent"


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    info.create_system = 3  # unix, so the modes above are honoured everywhere
    return info


def write_zipapp(target: Path, source_dir: Path | None = None) -> str:
    """Write the archive to ``target`` (overwriting it); returns the source hash."""
    root = source_dir or AGENT_DIR
    digest = agent_hash(root)
    with target.open("wb") as fh:
        fh.write(SHEBANG)
        with zipfile.ZipFile(fh, "w") as zf:
            zf.writestr(_entry("__main__.py"), MAIN)
            for path in agent_sources(root):
                relative = path.relative_to(root).as_posix()
                if relative in EXCLUDED:
                    continue
                zf.writestr(_entry(f"{PACKAGE_NAME}/{relative}"), path.read_bytes())
            zf.writestr(
                _entry(f"{PACKAGE_NAME}/_build_info.py"),
                f'"""Written by edgehub.agent.bundle."""\n\nAGENT_HASH = "{digest}"\n',
            )
    target.chmod(0o755)
    return digest


def build_agent_zipapp(cache_dir: Path | None = None, source_dir: Path | None = None) -> Path:
    """``<cache>/edgehub-agent-<hash12>.pyz``, built unless a file of that name already exists.

    ``cache_dir`` defaults to ``$EDGEHUB_CACHE_DIR/agent``, else ``~/.cache/edgehub/agent``.
    ``source_dir`` (tests) builds from another copy of the agent sources.
    """
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    digest = agent_hash(source_dir)
    target = directory / f"edgehub-agent-{digest[:12]}.pyz"
    if target.is_file():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with replacing(target, new_mode=0o755) as tmp:
        write_zipapp(Path(tmp), source_dir)
    return target
