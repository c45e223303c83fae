"""A private temporary folder made the first time a file in it is asked for.

A job that never needs one (a TensorRT build of a static fp32 model) creates nothing and does
not import ``tempfile`` and ``shutil`` (milliseconds of every cold job's start). The folder is
``tempfile.mkdtemp``'s: new, of this user only (0700), so nobody else on the machine can plant
or read a file in it; it is removed with everything in it when the ``with`` block ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Scratch:
    """``with Scratch(prefix) as scratch: scratch.file(name)``: a path in the folder, made then."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.folder: Path | None = None

    def file(self, name: str) -> Path:
        if self.folder is None:
            import tempfile

            self.folder = Path(tempfile.mkdtemp(prefix=self.prefix))
        return self.folder / name

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.folder is not None:
            import shutil

            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
