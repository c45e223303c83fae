"""Small file-system helpers shared by the store, the config and the toolchains."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from edgehub.agent.atomic import atomic_write, replacing  # the one implementation

__all__ = ["atomic_write", "link_or_copy", "link_tree", "replacing"]


def link_or_copy(src: str, dst: str) -> str:
    """Hard-link ``src`` to ``dst``, copying when a link is impossible (other file system)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def link_tree(source: Path, target: Path) -> None:
    """Hard-link (or copy) a file or a whole directory to ``target``."""
    if source.is_dir():
        shutil.copytree(source, target, copy_function=link_or_copy)
    else:
        link_or_copy(str(source), str(target))
