"""Checking that stored artifacts still hold the bytes their names promise (``hub doctor``).

Problems found: ``mismatch`` (the content's hash is not its directory's name: it was edited in
place), ``linked`` (a file shares its inode with a file outside the store: a hard link an older
release made, which edits of the original would change), ``missing`` (a run refers to a stored
file that is gone), ``stale`` (an unfinished copy of a process that has ended), ``link`` (a
symbolic link where the store keeps its own files; never followed) and ``stray`` (a file the
store did not make). Repair moves mismatched content to ``quarantine/``, gives linked files a
copy of their own, and removes stale copies and links; a missing file cannot be brought back
and a stray one is left to its owner: both are only reported. Unfinished copies that a running
process is still writing are left alone (`staging`). Each problem names the runs that use it.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.tracking.artifacts import clone_or_copy, hash_path
from edgehub.tracking.db import translate_storage_errors
from edgehub.tracking.staging import PREFIX, Staging, inspect_staging, remove_staging

if TYPE_CHECKING:
    from edgehub.tracking.store import RunStore


UNREPAIRABLE = frozenset({"missing", "stray"})
_STRAY = "not a file the store made; remove or move it by hand"


@dataclass(frozen=True)
class ArtifactProblem:
    kind: str  # "mismatch" | "linked" | "missing" | "stale" | "link" | "stray"
    path: Path
    detail: str
    repaired: str | None = None  # what repair did, if it ran
    runs: tuple[str, ...] = ()  # "run 1a2b3c4d: input model.onnx" for each run using it

    @property
    def repairable(self) -> bool:
        return self.kind not in UNREPAIRABLE

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "detail": self.detail,
                "repaired": self.repaired, "runs": list(self.runs)}  # fmt: skip


@dataclass
class ArtifactReport:
    checked: int = 0
    problems: list[ArtifactProblem] = field(default_factory=list)
    left_alone: list[Staging] = field(default_factory=list)  # copies still being written

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "ok": self.ok,
                "problems": [p.to_dict() for p in self.problems],
                "left_alone": [{"path": str(s.path), "reason": s.reason}
                               for s in self.left_alone]}  # fmt: skip


def _own_copy(path: Path) -> None:
    """Replace a hard-linked file by a copy of its own (same bytes, new inode)."""
    fresh = path.with_name(f".{path.name}.copy")
    fresh.unlink(missing_ok=True)
    clone_or_copy(str(path), str(fresh))
    os.replace(fresh, path)


def _linked_files(entry: Path) -> list[Path]:
    files = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
    return [p for p in files if p.stat().st_nlink > 1]


def _check_entry(
    entry: Path, sha: str, quarantine: Path, repair: bool, runs: tuple[str, ...]
) -> list[ArtifactProblem]:
    if entry.is_symlink():
        return [_link(entry, repair, runs)]
    if not entry.is_file() and not entry.is_dir():  # a FIFO or a device: never opened
        return [ArtifactProblem("stray", entry, _STRAY, runs=runs)]
    actual = hash_path(entry)
    if actual != sha:
        done = None
        if repair:
            target = quarantine / f"{sha}-{int(time.time())}" / entry.name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(entry, target)
            done = f"moved to {target}"
        detail = f"content hash {actual[:12]} does not match its name {sha[:12]}"
        return [ArtifactProblem("mismatch", entry, detail, done, runs)]
    problems = []
    for linked in _linked_files(entry):
        done = None
        if repair:
            _own_copy(linked)
            done = "replaced by a copy of its own"
        detail = "hard-linked to a file outside the store (edits there would change it)"
        problems.append(ArtifactProblem("linked", linked, detail, done, runs))
    return problems


def _link(path: Path, repair: bool, runs: tuple[str, ...] = ()) -> ArtifactProblem:
    done = None
    if repair:
        path.unlink(missing_ok=True)
        done = "removed the link (its target untouched)"
    detail = "a symbolic link where the store keeps its own files (not followed)"
    return ArtifactProblem("link", path, detail, done, runs)


def _users(store: RunStore) -> tuple[dict[Path, list[str]], list[ArtifactProblem]]:
    """Which runs use each stored path, and the stored files runs refer to that are gone."""
    users: dict[Path, list[str]] = {}
    missing = []
    for run in store.list_runs(limit=None):
        for artifact in run.all_artifacts:
            path = artifact.file_path
            if not artifact.is_stored or not isinstance(path, Path):
                continue
            label = " ".join(filter(None, [artifact.name, artifact.file_name]))
            use = f"run {run.run_id[:8]}: {label}"
            users.setdefault(path, []).append(use)
            if not path.exists() and not path.is_symlink():
                detail = f"{use} is gone; it cannot be brought back: rerun the run to make it again"
                missing.append(ArtifactProblem("missing", path, detail, runs=(use,)))
    return users, missing


def _unfinished(entry: Path, repair: bool, report: ArtifactReport) -> None:
    staging = inspect_staging(entry)
    if not staging.removable:
        report.left_alone.append(staging)
        return
    kind = "link" if entry.is_symlink() else "stale"
    done = None
    if repair:
        remove_staging(entry)
        done = "removed the link (its target untouched)" if kind == "link" else "removed"
    report.problems.append(ArtifactProblem(kind, entry, staging.reason, done))


def _check_top(
    entry: Path,
    users: dict[Path, list[str]],
    quarantine: Path,
    repair: bool,
    report: ArtifactReport,
) -> None:
    """One entry of the artifacts folder: an unfinished copy, a link, a stray file, or a
    content directory whose items are checked."""
    if entry.name.startswith(PREFIX):
        _unfinished(entry, repair, report)
    elif entry.is_symlink():
        report.problems.append(_link(entry, repair))
    elif not entry.is_dir():
        report.problems.append(ArtifactProblem("stray", entry, _STRAY))
    else:
        for item in sorted(entry.iterdir()):
            report.checked += 1
            runs = tuple(users.get(item, ()))
            report.problems.extend(_check_entry(item, entry.name, quarantine, repair, runs))


def verify_artifacts(store: RunStore, repair: bool = False) -> ArtifactReport:
    """Re-hash every stored artifact; with ``repair``, fix what can be fixed (see module).
    Links are never followed, and copies a running process is writing are left alone."""
    root = store.artifacts.root
    quarantine = store.artifacts.quarantine
    report = ArtifactReport()
    doing = "repair the stored artifacts" if repair else "check the stored artifacts"
    with translate_storage_errors(root, doing):
        users, missing = _users(store)
        for entry in sorted(root.iterdir()) if root.is_dir() else []:
            # one finished or removed meanwhile (a running `hub`, another doctor) is skipped
            with suppress(FileNotFoundError):
                _check_top(entry, users, quarantine, repair, report)
        gone = [p for p in report.problems if p.kind == "mismatch" and p.repaired]
        report.problems.extend(
            ArtifactProblem("missing", p.path, f"{use} is now in quarantine (edited in place); "
                            "rerun the run to make it again", runs=(use,))
            for p in gone for use in p.runs
        )  # fmt: skip
        report.problems.extend(missing)
    return report
