"""`hub runs delete RUN`: a run, its child runs (a pipeline's steps, an A/B run's profiles, a
sweep's cells) and what they alone kept in the store, removed.

`deletion_plan` says what would go, so the front end can ask first; `delete_runs` removes it:
the rows in one transaction, then the stored files no other run refers to and the runs'
folders. A run still running is refused (its process would go on writing to it). This is how a
run that should not be in the store (an imported one, say) is taken out again.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.ops.project import Project
    from edgehub.tracking.records import RunRecord
    from edgehub.tracking.store import RunStore


@dataclass(frozen=True)
class DeletionPlan:
    """The run named and the child runs that go with it."""

    run: RunRecord
    children: list[RunRecord] = field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return [self.run.run_id, *(child.run_id for child in self.children)]


@dataclass(frozen=True)
class DeletionResult:
    """What a deletion removed: the runs and the stored files and folders."""

    run_ids: list[str]
    files_removed: int


def deletion_plan(project: Project, ref: str) -> DeletionPlan:
    """The run ``ref`` names (an id, a unique prefix, ``latest``...) and its descendants;
    refuses an ambiguous prefix (`RunNotFoundError`) and a run still running."""
    with closing(project.store()) as store:
        run = store.get_run(ref)
        children = [store.get_run(run_id) for run_id in with_descendants(store, [run.run_id])[1:]]
    running = [r for r in (run, *children) if r.status == "RUNNING"]
    if running:
        raise UsageError(
            f"run {running[0].run_id[:8]} is still running (pid {running[0].pid}); stop it "
            "(or wait for it to end) before deleting it"
        )
    return DeletionPlan(run, children)


def with_descendants(store: RunStore, run_ids: list[str]) -> list[str]:
    """``run_ids`` (without repeats), then their child runs, generation by generation."""
    found = list(dict.fromkeys(run_ids))
    frontier = list(found)
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = store.rows(f"SELECT id FROM runs WHERE parent_id IN ({marks})", tuple(frontier))
        frontier = [str(r["id"]) for r in rows if str(r["id"]) not in found]
        found.extend(frontier)
    return found


def delete_runs(project: Project, plan: DeletionPlan) -> DeletionResult:
    """Delete the runs of ``plan`` and the files only they kept."""
    from edgehub.tracking.deletion import remove_stored

    with closing(project.store()) as store:
        problem = store.read_only_problem
        if problem is not None:
            raise problem.error(f"delete run {plan.run.run_id[:8]}")
        removable = store.delete_runs(plan.run_ids)
    for path in removable:
        remove_stored(path)
    return DeletionResult(plan.run_ids, len(removable))
