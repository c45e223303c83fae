"""Host side: build (and cache) the agent zipapp. Standard library only.

The archive holds the agent package as ``edgehub_agent/`` (without this module and
``__pycache__``), a generated ``edgehub_agent/_build_info.py`` with the source hash, and a
top-level ``__main__.py``: ``python edgehub-agent-<hash12>-<tag>.pyz COMMAND ...`` runs it.
Beside each module goes its bytecode as this interpreter compiles it (``<tag>``, e.g.
``cpython-311``; unchecked, hash-based pycs: the archive is built from the same sources and
named by their hash), so the same Python version (the images' 3.11) runs it without compiling
~60 modules at every start, which zipimport cannot cache (`benchmarks/bench_ort_local.py` (d));
other versions read the sources. Builds are deterministic (sorted entries, fixed timestamps and
modes) and written to a temporary name then renamed, so concurrent builds are safe.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import marshal
import os
import sys
import zipfile
from pathlib import Path

from .atomic import replacing

AGENT_DIR = Path(__file__).resolve().parent
PACKAGE_NAME = "edgehub_agent"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SHEBANG = b"#!/usr/bin/env python3\n"
EXCLUDED = frozenset({"bundle.py", "_build_info.py"})

MAIN = """\
from edgehub_agent.entry import exit_now, main

exit_now(main())
"""


def agent_sources(source_dir: Path | None = None) -> list[Path]:
    """The agent's .py files, in a deterministic order (POSIX relative paths, sorted)."""
    root = source_dir or AGENT_DIR
    return [root / relative for relative in _relative_sources(root)]


def _relative_sources(root: Path) -> list[str]:
    """`agent_sources` as sorted POSIX paths relative to ``root`` (one walk of the folders:
    a warm job names its agent by their hash, so this runs at every `hub` command's job)."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        where = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if where == "." else where + "/"
        found += [prefix + n for n in names if n.endswith(".py") and n != "_build_info.py"]
    return sorted(found)


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
    for relative in _relative_sources(root):
        data = (root / relative).read_bytes()
        name = relative.encode()
        digest.update(len(name).to_bytes(4, "big") + name)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    info.create_system = 3  # unix, so the modes above are honoured everywhere
    return info


def _bytecode(source: bytes, name: str) -> bytes:
    """``source`` as an unchecked hash-based ``.pyc`` of this interpreter (PEP 552)."""
    code = compile(source, name, "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")  # hash-based, not checked against the source
    return (
        importlib.util.MAGIC_NUMBER
        + flags
        + importlib.util.source_hash(source)
        + marshal.dumps(code)
    )


def write_zipapp(target: Path, source_dir: Path | None = None) -> str:
    """Write the archive to ``target`` (overwriting it); returns the source hash."""
    root = source_dir or AGENT_DIR
    digest = agent_hash(root)
    modules = [("__main__.py", MAIN.encode())]
    for relative in _relative_sources(root):
        if relative not in EXCLUDED:
            modules.append((f"{PACKAGE_NAME}/{relative}", (root / relative).read_bytes()))
    info = f'"""Written by edgehub.agent.bundle."""\n\nAGENT_HASH = "{digest}"\n'
    modules.append((f"{PACKAGE_NAME}/_build_info.py", info.encode()))
    with target.open("wb") as fh:
        fh.write(SHEBANG)
        with zipfile.ZipFile(fh, "w") as zf:
            for name, source in modules:
                zf.writestr(_entry(name), source)
                if sys.implementation.cache_tag:
                    zf.writestr(_entry(name + "c"), _bytecode(source, name))
    target.chmod(0o755)
    return digest


def build_agent_zipapp(cache_dir: Path, source_dir: Path | None = None) -> Path:
    """``<cache>/edgehub-agent-<hash12>-<tag>.pyz`` (``<tag>``: this interpreter's bytecode
    tag), built unless a file of that name already exists.

    ``cache_dir``: the host's ``agent`` cache folder (``edgehub.paths.cache_subdir("agent")``;
    this device-side package imports nothing else of edgehub). ``source_dir`` (tests) builds
    from another copy of the agent sources.
    """
    directory = Path(cache_dir)
    digest = agent_hash(source_dir)
    tag = sys.implementation.cache_tag or "source"
    target = directory / f"edgehub-agent-{digest[:12]}-{tag}.pyz"
    if target.is_file():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with replacing(target, new_mode=0o755) as tmp:
        write_zipapp(Path(tmp), source_dir)
    return target
