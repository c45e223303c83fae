"""What a Ray task runs on a node: one sweep cell in a store of its own, sent back as a bundle.

The task first takes its attempt number from the driver's `Attempts` actor (so the driver
learns of an attempt lost with its node), then checks the node: the same edgehub version as
the driver, and a Docker daemon when the cell's device runs in containers, with the runtime's
image: one it lacks is built there, offline from the same Dockerfile and locks, and one whose
id differs from the driver's (where the driver has one) is refused. A node that fails a check
refuses the cell in one line naming it; a driver with no image lets each node build its own,
whose digest the cell's run records (`hub runs compare` then sees the digests differ).
The cell runs as in a local sweep (`SweepSession.run_cell`), under the driver's sweep run id,
its run carrying ``cluster.node``,
``cluster.attempt`` and ``cluster.worker_pid``; every run of the task's store (the cell's and
its components') is exported with `edgehub.ops.bundles.export_runs`, and the bundle's bytes
are the task's result.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.ops.project import Project

if TYPE_CHECKING:
    from edgehub.ops.sweep import CellResult
    from edgehub.ops.sweep_grid import SweepCell, SweepGrid

log = logging.getLogger(__name__)


_LEASE_POLL_S = 0.25


@dataclass(frozen=True)
class CellJob:
    """One cell as the driver sends it: the project's hub.toml text and what the cell needs."""

    hub_toml: str
    version: str
    parent: str
    slot: str  # the cell's place in this sweep's dispatch (its attempts are counted by it)
    grid: SweepGrid
    cell: SweepCell
    result: CellResult
    needs_docker: bool
    lease_timeout: float | None = None
    timeout: float | None = None
    image_tags: dict[str, str] = field(default_factory=dict)
    no_cache: bool = False
    image_id: str | None = None  # the driver's image of the cell's runtime, where it has one
    board: str | None = None  # a board any node may reach: leased cluster-wide


@dataclass(frozen=True)
class CellOutcome:
    """What comes back: the cell's result and its run's bundle, or why the node refused it."""

    node: str
    attempt: int
    result: CellResult | None = None
    bundle: bytes | None = None
    refused: str | None = None


class Attempts:
    """The driver's record of each cell's attempts (a Ray actor on the head node): a task
    that starts tells it the node and worker process; the attempts before the last one of a
    cell are those Ray retried."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[int, str, int]]] = {}
        self.log: list[tuple[str, str]] = []  # (slot, node), in the order they started

    def start(self, slot: str, node: str, pid: int) -> int:
        tries = self.seen.setdefault(slot, [])
        tries.append((len(tries) + 1, node, pid))
        self.log.append((slot, node))
        return len(tries)

    def of(self, slots: list[str]) -> dict[str, list[tuple[int, str, int]]]:
        """Each slot's attempts: (number, node, worker pid)."""
        return {slot: list(self.seen.get(slot, [])) for slot in slots}

    def since(self, start: int) -> list[tuple[str, str]]:
        return self.log[start:]


class Boards:
    """Cluster-wide board leases (a Ray actor on the head node): a node's own lease (a lock
    file, `edgehub.acquire.leases`) guards a board against the processes of its host; this
    one against the other nodes. A holder whose node died loses its lease."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[str, str]] = {}  # board -> (slot, Ray node id)

    def take(self, board: str, slot: str, node_id: str) -> str | None:
        """None when ``slot`` now holds ``board``; else the holder's slot."""
        import ray

        holder = self.held.get(board)
        if holder is not None and holder[0] != slot:
            alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}  # type: ignore[no-untyped-call]
            if holder[1] in alive:
                return holder[0]
        self.held[board] = (slot, node_id)
        return None

    def give(self, board: str, slot: str) -> None:
        if self.held.get(board, ("", ""))[0] == slot:
            del self.held[board]


def _cluster_lease(job: CellJob, boards: Any, cancelled: Any) -> None:
    """Wait for ``job.board``'s cluster-wide lease (bounded by the lease timeout)."""
    import time

    import ray

    from edgehub.acquire.leases import check_lease_timeout
    from edgehub.errors import DeviceBusyError

    node_id = ray.get_runtime_context().get_node_id()
    deadline = time.monotonic() + check_lease_timeout(job.lease_timeout)
    while True:
        holder = ray.get(boards.take.remote(job.board, job.slot, node_id))
        if holder is None:
            return
        if time.monotonic() > deadline or cancelled():
            raise DeviceBusyError(
                f"board {job.board} stayed leased by another cell of this sweep (slot {holder}); "
                "raise --lease-timeout"
            )
        time.sleep(_LEASE_POLL_S)


def node_name() -> str:
    """This node: its host name and the start of its Ray node id."""
    import ray

    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


@dataclass
class _CellProject(Project):
    """The project of hub.toml with its store in the task's own folder."""

    root: Path = Path()

    @property
    def store_dir(self) -> Path:
        return self.root


def task_project(folder: Path, hub_toml: str) -> Project:
    """The project of the driver's ``hub_toml`` (written into ``folder``), with its store in
    ``folder/.hub``: a task's own."""
    from edgehub.config import load_config

    (folder / "hub.toml").write_text(hub_toml)
    return _CellProject(load_config(folder / "hub.toml"), root=folder / ".hub")


def _refusal(job: CellJob, node: str) -> str | None:
    """Why this node cannot run ``job``'s cell, in one line naming it; None when it can."""
    images = {job.cell.runtime: job.image_id} if job.needs_docker else None
    where = f"node {node} refused cell {job.result.label!r}"
    return node_refusal(where, job.version, images, job.image_tags, build=True)


def node_refusal(
    where: str,
    version: str,
    images: dict[str, str | None] | None,
    image_tags: dict[str, str],
    *,
    build: bool = False,
) -> str | None:
    """Why this node cannot run a task (``where``: the refusal's start, naming the node), in
    one line; None when it can. ``version``: the driver's edgehub. ``images`` (runtime -> the
    driver's image id, None where it has none): the task runs in containers, so the node needs
    a Docker daemon and each runtime's image (with ``build``, built here where missing),
    refused where it differs from the driver's; None: no container."""
    from edgehub import __version__
    from edgehub.errors import EdgehubError
    from edgehub.ops.recorded_image import short_digest
    from edgehub.runners.docker import connect

    if __version__ != version:
        return f"{where}: it has edgehub {__version__}, the driver {version}; install that"
    if images is None:
        return None
    try:
        connect(timeout=5).close()
    except (EdgehubError, OSError) as error:
        return f"{where}: no Docker daemon answers ({error}); start Docker on the node"
    for runtime, driver in images.items():
        mine = image_id(runtime, image_tags)
        if mine is None and build:
            built = _build_here(runtime, image_tags, where)
            if built is not None:
                return built
            mine = image_id(runtime, image_tags)
        if driver is not None and mine != driver:
            return (
                f"{where}: its {runtime} image is {short_digest(mine)}, the driver's "
                f"{short_digest(driver)}; build it from the same locks (hub images build) "
                "or load the driver's (docker save | docker load)"
            )
    return None


def _build_here(runtime: str, image_tags: dict[str, str], where: str) -> str | None:
    """Build ``runtime``'s image on this node from the same Dockerfile and locks, offline
    (the node's wheel cache); the refusal in one line where it cannot be built."""
    from edgehub import images
    from edgehub.errors import EdgehubError

    if runtime in image_tags or runtime not in images.available_runtimes():
        return None  # a pinned tag is never rebuilt; a runtime with no image needs none
    log.info("%s: building the %s image (offline, from the locks)", where, runtime)
    try:
        images.build_image(runtime, offline=True)
    except (EdgehubError, OSError) as error:
        return f"{where}: its {runtime} image is not built and cannot be built here ({error})"
    return None


def image_id(runtime: str, image_tags: dict[str, str]) -> str | None:
    """The id of ``runtime``'s image on this host (``image_tags`` pins one), None where it is
    not built or the runtime has no image."""
    from edgehub import images
    from edgehub.errors import EdgehubError

    try:
        tag = image_tags.get(runtime) or images.image_tag(runtime)
        attrs = images.image_attrs(tag)
    except (EdgehubError, OSError):
        return None
    return None if attrs is None else str(attrs["Id"])


def _placed(job: CellJob, folder: Path, model: bytes, inputs: bytes | None) -> Any:
    """The cell with its model (and inputs) written into ``folder``."""
    path = folder / "models" / job.cell.model.name
    path.parent.mkdir()
    path.write_bytes(model)
    given = None
    if inputs is not None:
        source = job.cell.inputs or job.grid.inputs
        given = folder / (source.name if source else "inputs.npz")
        given.write_bytes(inputs)
    return dataclasses.replace(job.cell, model=path, inputs=given)


def run_cell_task(
    job: CellJob, model: bytes, inputs: bytes | None, attempts: Any, boards: Any = None
) -> CellOutcome:
    """Run ``job``'s cell here (a Ray task's body; ``attempts``: the `Attempts` actor,
    ``boards``: the `Boards` actor)."""
    import ray

    from edgehub.ops.bundles import export_runs
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.sweep import SweepSession

    node = node_name()
    attempt = int(ray.get(attempts.start.remote(job.slot, node, os.getpid())))
    refused = _refusal(job, node)
    if refused is not None:
        return CellOutcome(node, attempt, refused=refused)
    with tempfile.TemporaryDirectory(prefix="edgehub-cell-") as tmp:
        folder = Path(tmp)
        project = task_project(folder, job.hub_toml)
        cell = _placed(job, folder, model, inputs)
        grid = dataclasses.replace(job.grid, inputs=None)
        session = SweepSession(
            project, grid, job.parent, None, Cancellation(), None, job.lease_timeout, job.timeout
        )
        session.image_tags, session.no_cache = dict(job.image_tags), job.no_cache
        session.cell_params = {
            "cluster.node": node,
            "cluster.attempt": str(attempt),
            "cluster.worker_pid": str(os.getpid()),
        }
        result = dataclasses.replace(job.result, node=node)
        leased = job.board is not None and boards is not None
        if leased:
            _cluster_lease(job, boards, lambda: session.cancel.cancelled)
        try:
            session.run_cell(cell, result)
        finally:
            if leased:
                boards.give.remote(job.board, job.slot)
        if result.run_id is None:
            return CellOutcome(node, attempt, result)
        bundle = folder / "cell.bundle"
        with closing(project.store()) as store:  # the cell's run and its components'
            runs = [run.run_id for run in store.list_runs(limit=None)]
        export_runs(project, runs, bundle)
        return CellOutcome(node, attempt, result, bundle.read_bytes())
