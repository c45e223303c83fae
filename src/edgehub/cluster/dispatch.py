"""`RayExecutor`: a sweep's cells as Ray tasks, their runs imported into the driver's store.

Each pending cell is submitted at once; Ray places it by its resources: a cell of a
``local``-provider device asks for the CPUs of its ``[devices.X.docker]`` table (else 1) and
one ``docker`` (a node's Docker daemon: ``ray start --resources='{"docker": 1}'``), any other
cell for one CPU. ``max_retries`` lets Ray run a cell again elsewhere when its node dies.
As cells finish, the driver imports each bundle (`edgehub.ops.bundles.import_runs`, checked
like any import) and reports the cell; every attempt Ray retried is recorded once, as a
FAILED cell run saying on which node it was lost. Ctrl-C, SIGTERM (whose handlers Ray's start
does not replace) or a cancelled sweep force-cancel the tasks still out, their cells reported
KILLED; at the end every live node reaps the containers that killed or dead workers left
(`edgehub.ops.cleanup.reap_leftovers`); a dead node's are reaped by the next edgehub process
on its host (or its `hub doctor`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import ray

from edgehub.cluster.address import ClusterAddress, parse_address, unreachable
from edgehub.cluster.worker import Attempts, Boards, CellJob, CellOutcome, image_id, run_cell_task
from edgehub.errors import EdgehubError, EnvironmentProblem, OperationCancelled

if TYPE_CHECKING:
    from edgehub.config.schema import HubConfig
    from edgehub.ops.sweep import CellResult, Pending, SweepSession
    from edgehub.ops.sweep_grid import SweepCell


MAX_RETRIES = 2  # a cell runs at most three times when its nodes keep dying
_HEAD = "node:__internal_head__"  # Ray's resource of the head node
POLL_S = 0.2  # how often the driver looks at its tasks (and at a cancel)


def _warm_up() -> None:
    """Load what a cell's task needs (a task's body: the worker process then keeps it)."""
    import edgehub.cluster.worker
    import edgehub.ops.bundles
    import edgehub.ops.sweep  # noqa: F401


def _warm_workers() -> None:
    """Start a worker process per CPU of the cluster (up to 64) and load edgehub there: a
    cost of joining the cluster, not of the first cells. Bounded; a slow node only waits."""
    cpus = min(64, int(ray.cluster_resources().get("CPU", 0)))  # type: ignore[no-untyped-call]
    warm = ray.remote(num_cpus=1)(_warm_up)
    with contextlib.suppress(Exception):  # else the cells start the workers themselves
        ray.get([warm.remote() for _ in range(cpus)], timeout=60)


def _reap_here() -> int:
    """Remove the containers of dead edgehub processes on this node (a Ray task's body)."""
    from edgehub.ops.cleanup import reap_leftovers

    return len(reap_leftovers().containers_removed)


class RayExecutor:
    """Runs sweep cells on the Ray cluster at ``address`` (see `parse_address`)."""

    def __init__(self, address: str | ClusterAddress) -> None:
        self.address = parse_address(address) if isinstance(address, str) else address
        self.connected = False
        self._stdout: TextIO | None = None
        self.task_body: Callable[..., CellOutcome] = run_cell_task  # a bench's stand-in

    def connect(self) -> None:
        """Join the cluster (or start the local instance); exit 3 in one line if unreachable.
        Until `close`, ``sys.stdout`` is stderr: Ray prints its notices (a node that died)
        on stdout, which is the sweep's table or JSON."""
        where = self.address
        where.check_reachable()
        self._stdout, sys.stdout = sys.stdout, sys.stderr
        stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        handlers = {signum: signal.getsignal(signum) for signum in stops}
        options: dict[str, Any] = {
            "log_to_driver": False,
            "logging_level": logging.ERROR,
            "configure_logging": True,
        }
        try:
            if where.workers is not None:
                ray.init(
                    num_cpus=where.workers,
                    resources={"docker": where.workers},
                    include_dashboard=False,
                    **options,
                )
            else:
                ray.init(address=where.text, **options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            self.close()
            raise unreachable(where.text, str(error).splitlines()[0]) from None
        finally:
            if threading.current_thread() is threading.main_thread():  # (TUI: a worker's)
                for signum, handler in handlers.items():  # Ray's own would end this process
                    signal.signal(signum, handler)
        self.connected = True
        _warm_workers()

    def close(self) -> None:
        if self.connected:
            ray.shutdown()
            self.connected = False
        if self._stdout is not None:
            sys.stdout, self._stdout = self._stdout, None

    # -- CellExecutor -----------------------------------------------------------------------

    def run_cells(self, session: SweepSession, pending: Pending) -> None:
        if not pending:
            return
        on_head: dict[str, Any] = {"num_cpus": 0, "resources": {_HEAD: 0.001}}
        attempts: Any = ray.remote(**on_head)(Attempts).remote()
        boards: Any = ray.remote(**on_head)(Boards).remote()
        task = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)(self.task_body)
        hub_toml = hub_toml_text(session.project.config)
        for device in dict.fromkeys(cell.device for cell, _ in pending):
            asked = device_resources(session.project.config, device)
            check_feasible(asked, f"a cell of device {device!r}")  # else Ray waits forever
        put = functools.cache(lambda path: ray.put(path.read_bytes()))  # each file once
        out: dict[Any, tuple[str, SweepCell, CellResult]] = {}
        where = _Placement(session.image_tags, session.project.config)
        for slot, (cell, result) in enumerate(pending):
            job = _job(session, cell, result, hub_toml, slot, where)
            inputs = cell.inputs or session.grid.inputs
            model_ref, inputs_ref = put(cell.model), put(inputs) if inputs is not None else None
            asked = device_resources(session.project.config, cell.device)
            ref = task.options(**asked).remote(job, model_ref, inputs_ref, attempts, boards)
            out[ref] = (job.slot, cell, result)
        try:
            self._collect(session, out, attempts)
        except BaseException:
            session.cancel.cancel()
            _cancel(session, out, attempts)
            raise
        finally:
            ray.kill(attempts)
            ray.kill(boards)
            reap_nodes()

    def _collect(self, session: SweepSession, out: dict[Any, Any], attempts: Any) -> None:
        started, slots = 0, {slot: result for slot, _, result in out.values()}
        while out:
            session.cancel.check()
            done, rest = ray.wait(list(out), num_returns=1, timeout=POLL_S)
            if done and rest:  # and every other one finished by now
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                done += more
            for slot, node in ray.get(attempts.since.remote(started)):
                started += 1
                live = slots.get(slot)
                if live is not None and live.status == "NOT_STARTED":
                    live.status, live.node = "RUNNING", node
                    session.notify(live)
            if not done:
                continue
            tries = ray.get(attempts.of.remote([out[ref][0] for ref in done]))
            for ref in done:
                slot, cell, result = out.pop(ref)
                try:
                    outcome: CellOutcome | None = ray.get(ref)
                    lost = None
                except ray.exceptions.RayError as error:
                    outcome, lost = None, first_line(error)
                _record(session, cell, result, outcome, tries[slot], lost)


def _cancel(session: SweepSession, out: dict[Any, Any], attempts: Any) -> None:
    """Force-cancel the tasks still out; a started one's cell is recorded KILLED."""
    for ref, (slot, cell, result) in out.items():
        with contextlib.suppress(Exception):  # already finished or its node gone
            ray.cancel(ref, force=True)
        if result.status != "RUNNING":
            continue
        result.status = "KILLED"
        try:
            tries = ray.get(attempts.of.remote([slot]), timeout=5)[slot]
        except Exception:  # the actor is gone: the cell is reported KILLED, not recorded
            continue
        for attempt, node, pid in tries[-1:]:
            why = f"cancelled on node {node} (attempt {attempt})"
            _failed_run(session, cell, result, node, attempt, pid, why, killed=True)


def reap_nodes() -> None:
    """On every live node, remove the containers its dead (or force-cancelled) workers left."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    reaper = ray.remote(num_cpus=0)(_reap_here)
    alive = ray.nodes()  # type: ignore[no-untyped-call]
    nodes = [n["NodeID"] for n in alive if n.get("Alive")]
    refs = []
    for node_id in nodes:
        strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
        refs.append(reaper.options(scheduling_strategy=strategy).remote())
    deadline = time.monotonic() + 30
    for ref in refs:  # a node that cannot answer: `hub doctor` there reaps later
        with contextlib.suppress(Exception):
            ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))


def check_feasible(asked: dict[str, Any], what: str) -> None:
    """`EnvironmentProblem` in one line when no live node has ``asked`` (task options: its
    ``num_cpus`` and ``resources``) for ``what``: Ray would hold that task forever."""
    alive = ray.nodes()  # type: ignore[no-untyped-call]
    nodes = [n.get("Resources", {}) for n in alive if n.get("Alive")]
    wants = {"CPU": asked["num_cpus"], **asked.get("resources", {})}
    if not any(all(node.get(k, 0) >= v for k, v in wants.items()) for node in nodes):
        shown = ", ".join(f"{k} {v:g}" for k, v in wants.items())
        raise EnvironmentProblem(
            f"no node of the Ray cluster has what {what} asks for ({shown}); start a node "
            "with enough CPUs and --resources='{\"docker\": 1}' (a local device's work runs "
            "in a container there)"
        )


def first_line(error: BaseException) -> str:
    """``error`` in one line: its type and its message's first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip()


def hub_toml_text(config: HubConfig) -> str:
    """The text of the project's hub.toml that the nodes load ("": none, the defaults)."""
    return config.path.read_text() if config.path is not None else ""


def device_resources(config: HubConfig, device: str, *, docker: bool = False) -> dict[str, Any]:
    """What a task on ``device`` asks Ray for: a ``local``-provider device's CPUs (its
    ``[devices.X.docker]`` table's, else 1) and one ``docker``; one CPU for any other device
    (``docker``: a task that runs in a container whatever the device's table)."""
    section = config.devices.get(device)
    if section is None or not in_container(section.provider):
        return {"num_cpus": 1, "resources": {"docker": 1}} if docker else {"num_cpus": 1}
    cpus = section.settings.values.get("cpus") if section.settings is not None else None
    return {"num_cpus": float(cpus or 1), "resources": {"docker": 1}}


def in_container(provider: str | None) -> bool:
    """Whether ``provider`` declares that it runs its tool in a pinned container on the host
    that runs the cell (`ProviderConfig.in_container`): a node's own Docker daemon."""
    from edgehub.core.device.spec import ProviderConfig

    declared = ProviderConfig.declared(provider)
    return declared is not None and declared.in_container


class _Placement:
    """What the driver pins for the cells, each found once: its image of each runtime (a node
    whose image differs refuses the cell) and the board of each device any node may reach
    (leased cluster-wide); a device of the ``local`` provider is each node's own."""

    def __init__(self, image_tags: dict[str, str], config: HubConfig) -> None:
        from edgehub.acquire.boards import board_key
        from edgehub.config.devices import to_device

        self.image = functools.cache(lambda runtime: image_id(runtime, image_tags))
        self.board = functools.cache(lambda device: board_key(to_device(config, device)))


def _job(
    session: SweepSession,
    cell: SweepCell,
    result: CellResult,
    hub_toml: str,
    slot: int,
    where: _Placement,
) -> CellJob:
    from edgehub import __version__

    section = session.project.config.devices.get(cell.device)
    local = section is not None and in_container(section.provider)
    return CellJob(
        hub_toml=hub_toml,
        version=__version__,
        parent=session.parent,
        slot=str(slot),
        grid=session.grid,
        cell=cell,
        result=result,
        needs_docker=local,
        image_id=where.image(cell.runtime) if local else None,
        board=None if local else where.board(cell.device),
        lease_timeout=session.lease_timeout,
        timeout=session.timeout,
        image_tags=dict(session.image_tags),
        no_cache=session.no_cache,
    )


def _record(
    session: SweepSession,
    cell: SweepCell,
    result: CellResult,
    outcome: CellOutcome | None,
    tries: list[tuple[int, str, int]],
    lost: str | None,
) -> None:
    """Put what came back of ``cell`` into the driver's store and ``result``."""
    last = outcome.attempt if outcome is not None else None
    for attempt, node, pid in tries:
        if attempt == last:
            continue
        if outcome is not None:
            why = (
                f"attempt {attempt} on node {node} (worker pid {pid}) was lost with its node or "
                f"worker; Ray ran the cell again (attempt {last} on node {outcome.node})"
            )
        else:
            why = f"attempt {attempt} on node {node} (worker pid {pid}) failed: {lost}"
        _failed_run(session, cell, result, node, attempt, pid, why)
    if outcome is None:
        if not tries:  # never started: Ray gave up on it before any node took it
            _failed_run(session, cell, result, None, 0, None, f"Ray lost the cell: {lost}")
        result.status = "FAILED"
    elif outcome.refused is not None:
        _failed_run(session, cell, result, outcome.node, outcome.attempt, None, outcome.refused)
        result.status, result.node = "FAILED", outcome.node
    else:
        _import(session, outcome)
        assert outcome.result is not None
        names = ("status", "run_id", "median_ms", "p99_ms", "max_abs_error", "node")
        for name in (*names, "cosine_similarity", "error"):
            setattr(result, name, getattr(outcome.result, name))
    session.notify(result)


def _import(session: SweepSession, outcome: CellOutcome) -> None:
    from edgehub.ops.bundles import import_runs

    assert outcome.result is not None
    if outcome.bundle is None:
        return
    with tempfile.TemporaryDirectory(prefix="edgehub-cell-") as tmp:
        name = f"cell-{(outcome.result.run_id or 'none')[:8]}-{outcome.node.replace('/', '-')}"
        path = Path(tmp) / f"{name}.bundle"
        path.write_bytes(outcome.bundle)
        try:
            import_runs(session.project, path)
        except EdgehubError as error:
            outcome.result.status, outcome.result.error = "FAILED", f"import refused: {error}"


def _failed_run(
    session: SweepSession,
    cell: SweepCell,
    result: CellResult,
    node: str | None,
    attempt: int,
    pid: int | None,
    why: str,
    *,
    killed: bool = False,
) -> None:
    """A FAILED (or, ``killed``, KILLED) cell run in the driver's store for an attempt whose
    own record was lost with its node or worker."""
    result.error = why
    end: Exception = OperationCancelled(why) if killed else _AttemptFailed(why)
    with (
        session.project.context() as ctx,
        contextlib.suppress(_AttemptFailed, OperationCancelled),
        ctx.open_run("SWEEP_CELL", cell.label, parent_run_id=session.parent) as run,
    ):
        result.run_id = run.run_id
        params = {"model": result.model, "device": cell.device, "runtime": cell.runtime}
        params.update({"cluster.attempt": str(attempt), "error": why})
        if node is not None:
            params["cluster.node"] = node
        if pid is not None:
            params["cluster.worker_pid"] = str(pid)
        ctx.client.log_params(params)
        raise end


class _AttemptFailed(EnvironmentProblem):
    """Ends a lost attempt's run FAILED with its reason."""
