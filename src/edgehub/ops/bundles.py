"""`hub runs export` and `hub runs import`: runs moved between stores as one bundle file.

Export takes the runs named and all their descendants (a pipeline's steps, an A/B run's
profiles, an eval's reference), their stored artifacts by content, and the Dockerfile and lock
file of each image they ran in where this checkout (or the store, from an earlier import) holds
the ones that made its tag. Local paths in what was recorded become relative to the store (the
home folder reads ``~``), and params, tags and environment entries named like secrets
(password, token, api key, ...) are left out. Import checks the whole bundle before it writes
(`edgehub.tracking.bundles`); a run already in the store with the same rows is skipped, so
importing twice changes nothing, and one with different rows refuses the import, as does a new
run whose id begins with (or is the start of) a run's here. Each run added is tagged
``imported_from`` (the bundle's name, the time): its compiled model was made elsewhere, so the
compile cache never serves it and ``--from-run`` refuses it (`RunStore.run_log`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.ops.run_delete import with_descendants
from edgehub.tracking.bundles import (
    IMPORTED_TAG,
    BundleContents,
    ImageLock,
    ImportResult,
    insert_runs,
    read_bundle,
    run_rows,
    same_rows,
    unmarked,
    write_bundle,
)
from edgehub.tracking.modes import make_private_dir, write_private

if TYPE_CHECKING:
    from edgehub.ops.project import Project
    from edgehub.tracking.store import RunStore


_IMAGES = "images"  # the store's folder of image locks brought in by imports


@dataclass(frozen=True)
class ExportResult:
    """What a bundle holds, and where it was written."""

    path: Path
    runs: list[str]
    artifacts: int
    images: list[str]
    size: int
    dropped_secrets: int


def _scrubber(store: RunStore, project: Project) -> Callable[[str], str]:
    places = [(f"{store.root}/", ""), (str(store.root), ".")]
    if project.config.path is not None:
        places.append((f"{project.config.path.parent.absolute()}/", ""))
    places.append((f"{Path.home()}/", "~/"))

    def scrub(text: str) -> str:
        for prefix, replacement in places:
            text = text.replace(prefix, replacement)
        return text

    return scrub


def _image_lock(store: RunStore, tag: str) -> ImageLock | None:
    """The Dockerfile and lock that made ``tag``: the store's (from an import), else this
    checkout's when they still make that tag."""
    folder = store.root / _IMAGES / tag.replace(":", "_")
    if not (folder / "Dockerfile").is_file() or not (folder / "requirements.lock").is_file():
        from edgehub.images import catalog

        runtime = tag.partition(":")[0].removeprefix("edgehub-")
        try:
            if catalog.image_tag(runtime) != tag:
                return None
            folder = catalog.runtime_dir(runtime)
        except UsageError:
            return None
    return ImageLock(
        tag, (folder / "Dockerfile").read_bytes(), (folder / "requirements.lock").read_bytes()
    )


def export_runs(project: Project, refs: list[str], output: Path) -> ExportResult:
    """Write the runs ``refs`` name (ids, prefixes, ``latest``...) and their descendants to
    the bundle ``output``."""
    with closing(project.store()) as store:
        chosen = with_descendants(store, [store.resolve_id(ref) for ref in refs])
        scrub = _scrubber(store, project)
        contents = BundleContents()
        for run_id in chosen:
            record = store.get_run(run_id)
            if record.status == "RUNNING":
                raise UsageError(f"run {run_id[:8]} is still running; export it once it has ended")
            rows, dropped = run_rows(store.rows, run_id, scrub)
            rows["run"]["status"] = record.status  # a dead RUNNING run reads KILLED
            contents.runs[run_id] = rows
            contents.dropped_secrets += dropped
            for artifact in record.all_artifacts:
                if artifact.device or not artifact.sha256 or not artifact.is_stored:
                    continue
                stored = Path(artifact.file_path)
                if not stored.exists():
                    raise UsageError(
                        f"artifact {artifact.file_name!r} of run {run_id[:8]} is missing from "
                        f"the store ({stored}); `hub doctor` says what else is damaged"
                    )
                contents.artifacts[f"{artifact.sha256}/{stored.name}"] = stored
            tag = record.environment.get("image")
            if tag and tag not in contents.images:
                lock = _image_lock(store, tag)
                if lock is not None:
                    contents.images[tag] = lock
    size = write_bundle(contents, output)
    return ExportResult(
        output, chosen, len(contents.artifacts), sorted(contents.images), size,
        contents.dropped_secrets,
    )  # fmt: skip


def import_runs(project: Project, bundle: Path) -> ImportResult:
    """Bring the runs of ``bundle`` into the project's store, all or nothing; each run added
    is tagged `IMPORTED_TAG` (never a compile-cache hit, refused by ``--from-run``)."""
    result = ImportResult()
    with closing(project.store()) as store:
        problem = store.read_only_problem
        if problem is not None:
            raise problem.error(f"import {bundle}")
        scrub = _scrubber(store, project)
        with read_bundle(bundle, store.artifacts.root) as staged:
            new = {}
            for run_id, rows in staged.runs.items():
                rows = unmarked(rows)  # another store's mark: this import sets its own
                existing = store.rows("SELECT id FROM runs WHERE id = ?", (run_id,))
                if not existing:
                    new[run_id] = rows
                    continue
                here, _ = run_rows(store.rows, run_id, scrub)
                if not same_rows(here, rows):
                    raise staged.refuse(
                        f"run {run_id[:8]} is already in this store with different records"
                    )
                result.already_present.append(run_id)
            _check_new_ids(store, new, staged.refuse)
            for key, source in staged.artifacts.items():
                sha = key.partition("/")[0]
                there = store.artifacts.path_for(sha, source.name).exists()
                _, stored_sha, _ = store.artifacts.add(source, source.name)  # reused if intact
                if stored_sha != sha:
                    raise staged.refuse(f"artifact {source.name!r} changed while it was stored")
                result.artifacts_added += 0 if there else 1
            for lock in staged.images:
                if _store_image_lock(store, lock):
                    result.images_added.append(lock.tag)
            if new:
                mark = _mark(bundle)
                with store.transaction(f"import the runs of {bundle}") as conn:
                    try:
                        insert_runs(conn, new.values())
                        conn.executemany(
                            "INSERT OR REPLACE INTO tags VALUES (?,?,?)",
                            [(run_id, IMPORTED_TAG, mark) for run_id in new],
                        )
                    except sqlite3.IntegrityError as error:  # rolled back
                        raise staged.refuse(f"its rows clash with this store's ({error})") from None
            result.imported = list(new)
    return result


def _mark(bundle: Path) -> str:
    """The `IMPORTED_TAG` value: the bundle's file name and when it was imported."""
    name = "".join(c if c.isprintable() else "?" for c in bundle.name)
    return f"{name}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def _check_new_ids(
    store: RunStore, new: dict[str, dict[str, Any]], refuse: Callable[[str], UsageError]
) -> None:
    """Refuse a new run whose id is a prefix of a run's here, or has one as its prefix (it
    would take over that run's short id), and artifact ids already used here or twice."""
    for run_id in new:
        clash = store.rows(
            "SELECT id FROM runs WHERE id != ? AND (substr(?, 1, length(id)) = id"
            " OR substr(id, 1, length(?)) = ?) LIMIT 1",
            (run_id, run_id, run_id, run_id),
        )
        if clash:
            raise refuse(
                f"run {run_id!r} would shadow run {clash[0]['id']!r} of this store (one id "
                "begins with the other)"
            )
    ids = [str(a["id"]) for rows in new.values() for a in rows["artifacts"]]
    if len(set(ids)) != len(ids):
        raise refuse("two of its artifact records share an id")
    for start in range(0, len(ids), 500):
        chunk = tuple(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        taken = store.rows(f"SELECT id FROM artifacts WHERE id IN ({marks}) LIMIT 1", chunk)
        if taken:
            raise refuse(f"artifact record {taken[0]['id']!r} is already used in this store")


def _store_image_lock(store: RunStore, lock: ImageLock) -> bool:
    folder = store.root / _IMAGES / lock.folder
    if (folder / "Dockerfile").is_file():
        return False
    make_private_dir(folder)
    write_private(folder / "Dockerfile", lock.dockerfile)
    write_private(folder / "requirements.lock", lock.lock)
    return True
