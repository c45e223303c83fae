"""Checking that stored artifacts still hold the bytes their names promise (``hub doctor``).

Problems found: ``mismatch`` (the content's hash is not its directory's name: it was edited in
place), ``linked`` (a file shares its inode with a file outside the store: a hard link an older
release made, which edits of the original would change), ``missing`` (a run refers to a stored
file that is gone) and ``stale`` (a half-stored copy left by a killed process). Repair moves
mismatched content to ``quarantine/``, gives linked files their own copy, and removes stale
copies; a missing file cannot be brought back and is only reported.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.tracking.artifacts import clone_or_copy, hash_path
from edgehub.tracking.db import translate_storage_errors

if TYPE_CHECKING:
    from edgehub.tracking.store import RunStore

__all__ = ["ArtifactProblem", "ArtifactReport", "verify_artifacts"]


@dataclass(frozen=True)
class ArtifactProblem:
    kind: str  # "mismatch" | "linked" | "missing" | "stale"
    path: Path
    detail: str
    repaired: str | None = None  # what repair did, if it ran

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "detail": self.detail,
                "repaired": self.repaired}  # fmt: skip


@dataclass
class ArtifactReport:
    checked: int = 0
    problems: list[ArtifactProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "ok": self.ok,
                "problems": [p.to_dict() for p in self.problems]}  # fmt: skip


def _own_copy(path: Path) -> None:
    """Replace a hard-linked file by a copy of its own (same bytes, new inode)."""
    fresh = path.with_name(f".{path.name}.copy")
    fresh.unlink(missing_ok=True)
    clone_or_copy(str(path), str(fresh))
    os.replace(fresh, path)


def _linked_files(entry: Path) -> list[Path]:
    files = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
    return [p for p in files if p.stat().st_nlink > 1]


def _check_entry(entry: Path, sha: str, quarantine: Path, repair: bool) -> list[ArtifactProblem]:
    actual = hash_path(entry)
    if actual != sha:
        done = None
        if repair:
            target = quarantine / f"{sha}-{int(time.time())}" / entry.name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(entry, target)
            done = f"moved to {target}"
        detail = f"content hash {actual[:12]} does not match its name {sha[:12]}"
        return [ArtifactProblem("mismatch", entry, detail, done)]
    problems = []
    for linked in _linked_files(entry):
        done = None
        if repair:
            _own_copy(linked)
            done = "replaced by a copy of its own"
        detail = "hard-linked to a file outside the store (edits there would change it)"
        problems.append(ArtifactProblem("linked", linked, detail, done))
    return problems


def verify_artifacts(store: RunStore, repair: bool = False) -> ArtifactReport:
    """Re-hash every stored artifact; with ``repair``, fix what can be fixed (see module)."""
    root = store.artifacts.root
    quarantine = store.root / "quarantine"
    report = ArtifactReport()
    doing = "repair the stored artifacts" if repair else "check the stored artifacts"
    with translate_storage_errors(root, doing):
        for sha_dir in sorted(root.iterdir()) if root.is_dir() else []:
            if sha_dir.name.startswith(".incoming-"):
                done = None
                if repair:
                    shutil.rmtree(sha_dir, ignore_errors=True)
                    done = "removed"
                detail = "an unfinished copy (its process was stopped)"
                report.problems.append(ArtifactProblem("stale", sha_dir, detail, done))
                continue
            for entry in sorted(sha_dir.iterdir()):
                report.checked += 1
                report.problems.extend(_check_entry(entry, sha_dir.name, quarantine, repair))
        for run in store.list_runs(limit=None):
            for artifact in run.all_artifacts:
                path = artifact.file_path
                if artifact.is_stored and isinstance(path, Path) and not path.exists():
                    detail = (
                        f"artifact {artifact.name or artifact.file_name!r} of run {run.run_id[:8]}"
                    )
                    report.problems.append(ArtifactProblem("missing", path, detail))
    return report
