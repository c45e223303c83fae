"""Running a sweep: every cell of a `SweepGrid`, recorded as one ``SWEEP`` run with a child
``SWEEP_CELL`` run per cell (its params and headline metrics); the component runs a cell starts
carry the tags ``sweep`` and ``sweep.cell`` (the ids of the two).

Who runs the cells is a `CellExecutor`: `LocalExecutor` (the default) runs the cells of
different devices at the same time, a thread per device, and a device's cells one after another,
each holding the device (`edgehub.acquire.hold`), so other edgehub processes wait for it too; a
labgrid pool device gets a thread per usable place (quarantined places get none), each cell
holding a free place. An executor a front end passes (`edgehub.cluster`: a Ray task per cell,
its run sent back as a bundle) records in the cell's ``node`` where it ran.

A failed cell is recorded FAILED and the others go on; a pool's cell that failed because its
board died (connection lost, health check failed) runs once more on another place, its result
(and its second cell run) marked ``retried``. A `Cancellation` (Ctrl-C) stops the running cells
(their runs end KILLED), the cells not yet started are reported NOT_STARTED, and the parent run
ends KILLED. With ``resume`` a cell that finished in an earlier sweep (same step, model content,
device, runtime and values) is not run again: its earlier result is reported. The device there is
what it *is* (`ops.device_identity`: its resolved address, provider and settings), not its name:
a renamed device keeps its finished cells, one whose host or settings changed is measured again
(with a note), as are cells recorded before identities were kept.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import closing
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from edgehub.errors import OperationCancelled, UsageError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.execute import ExecRequest, execute, step_components
from edgehub.ops.options import option_values
from edgehub.ops.reports import PipelineReport, RunReport, log_json
from edgehub.ops.sweep_grid import value_text

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.ops.device_identity import DeviceIdentity
    from edgehub.ops.project import Project, Subscriber
    from edgehub.ops.sweep_grid import SweepCell, SweepGrid


SWEEP_RUN = "SWEEP"
CELL_RUN = "SWEEP_CELL"


@dataclass
class CellResult:
    """One cell's outcome; ``status`` is FINISHED, FAILED, KILLED, NOT_STARTED or RUNNING."""

    label: str
    model: str
    device: str
    runtime: str
    settings: dict[str, str]
    key: str
    status: str = "NOT_STARTED"
    run_id: str | None = None
    median_ms: float | None = None
    p99_ms: float | None = None
    max_abs_error: float | None = None
    cosine_similarity: float | None = None
    error: str | None = None
    reused_from: str | None = None  # the earlier sweep cell run (--resume)
    device_identity: str | None = None  # what the device is (`DeviceIdentity.describe`)
    name_key: str | None = None  # the key with the device's name in place of its identity
    retried: str | None = None  # why the cell ran again on another board of its pool
    node: str | None = None  # the cluster node that ran it (`edgehub.cluster`)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SweepReport:
    run_id: str
    status: str
    step: str
    cells: list[CellResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CellResult]:
        return [c for c in self.cells if c.status == "FAILED"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CellCallback = Callable[[CellResult], None]
_HEADLINE = ("median_ms", "p99_ms", "max_abs_error", "cosine_similarity")  # a cell's metrics


def _result(cell: SweepCell, step: str, identities: dict[str, DeviceIdentity]) -> CellResult:
    identity = identities.get(cell.device)
    return CellResult(
        label=cell.label,
        model=str(cell.model),
        device=cell.device,
        runtime=cell.runtime,
        settings={k: value_text(v) for k, v in cell.settings},
        key=cell.key(step, f"identity {identity.key}" if identity else None),
        device_identity=identity.describe() if identity else None,
        name_key=cell.key(step),
    )


def _identities(project: Project, devices: list[str]) -> dict[str, DeviceIdentity]:
    """The identity of each device of the grid that hub.toml declares."""
    from edgehub.ops.device_identity import device_identity

    known = project.config.devices
    return {name: device_identity(project.config, name) for name in devices if name in known}


def _headline(result: CellResult, report: RunReport | PipelineReport) -> None:
    profile = report.profile if isinstance(report, PipelineReport) else report
    latency = profile.latency_ms if profile is not None else None
    if latency:
        result.median_ms, result.p99_ms = latency.get("median"), latency.get("p99")
    if isinstance(report, PipelineReport) and report.accuracy:
        result.max_abs_error = max(row.max_abs_error for row in report.accuracy)
        result.cosine_similarity = min(row.cosine_similarity for row in report.accuracy)


def _reuse(result: CellResult, earlier: CellResult) -> None:
    """Report ``earlier``'s outcome for this cell (--resume)."""
    result.status, result.run_id, result.reused_from = "FINISHED", earlier.run_id, earlier.run_id
    for name in _HEADLINE:
        setattr(result, name, getattr(earlier, name))


def _metrics(result: CellResult) -> dict[str, float]:
    values = {n: getattr(result, n) for n in _HEADLINE}
    return {n: float(v) for n, v in values.items() if isinstance(v, (int, float))}


_CELL_FIELDS = {f.name for f in dataclasses.fields(CellResult)}


def _finished_cells(project: Project) -> tuple[dict[str, CellResult], dict[str, CellResult]]:
    """Earlier FINISHED cells by key and by name key (the newest wins). A cell recorded before
    identities were kept has only a key, made with the device's name: its name key."""
    from edgehub.tracking.records import RunFilter

    found: dict[str, CellResult] = {}
    by_name: dict[str, CellResult] = {}
    with closing(project.store()) as store:
        runs = store.query_runs(RunFilter(run_type=CELL_RUN, status="FINISHED", limit=None))
    for run in reversed(runs):  # oldest first, so that newer ones overwrite
        text = run.params.get("cell")
        try:
            data = json.loads(text) if isinstance(text, str) else None
            if not isinstance(data, dict):
                continue
            cell = CellResult(**{k: v for k, v in data.items() if k in _CELL_FIELDS})
        except (ValueError, TypeError):
            continue  # not a cell record this version can read: measured again
        cell.status, cell.run_id, cell.error, cell.reused_from = "FINISHED", run.run_id, None, None
        if cell.device_identity is None:  # recorded before identities were kept
            cell.name_key = cell.key
        else:
            found[cell.key] = cell
        if cell.name_key:
            by_name[cell.name_key] = cell
    return found, by_name


def _changed_note(result: CellResult, earlier: CellResult) -> str:
    """Why an earlier finished cell of this device name is not reused."""
    if earlier.device_identity is None:
        return (
            f"device {result.device!r}: its earlier sweep results do not record what the device "
            "is (older edgehub); its cells are measured again"
        )
    return (
        f"device {result.device!r} changed in hub.toml (now {result.device_identity}; was "
        f"{earlier.device_identity}); its cells are measured again"
    )


class SweepSession:
    """One sweep's running state: what each cell's run needs and the `notify` of its results.
    An executor runs cells with `run_cell` (here, or on a worker with a session of its own)."""

    def __init__(
        self,
        project: Project,
        grid: SweepGrid,
        parent: str,
        subscriber: Subscriber | None,
        cancel: Cancellation,
        on_cell: CellCallback | None,
        lease_timeout: float | None,
        timeout: float | None = None,
    ) -> None:
        self.project, self.grid, self.parent = project, grid, parent
        self.subscriber, self.cancel, self.on_cell = subscriber, cancel, on_cell
        self.lease_timeout, self.timeout = lease_timeout, timeout
        self.lock = threading.Lock()
        self.boards: dict[str, int] = {}  # a pool device's usable places
        self.image_tags: dict[str, str] = {}
        self.no_cache = False
        self.cell_params: dict[str, str] = {}  # logged on every cell run (an executor's)

    def notify(self, result: CellResult) -> None:
        if self.on_cell is not None:
            with self.lock:
                self.on_cell(result)

    def request(self, cell: SweepCell, cell_run: str) -> ExecRequest:
        from edgehub.core.runtimes import get_runtime

        components = step_components(get_runtime(cell.runtime), self.grid.step)
        return ExecRequest(
            step=self.grid.step,
            runtime=cell.runtime,
            model=cell.model,
            device=cell.device,
            options=option_values(cell.settings, components, given_as="sweep option"),
            inputs=cell.inputs or self.grid.inputs,
            tags={"sweep": self.parent, "sweep.cell": cell_run},
            lease_timeout=self.lease_timeout,
            timeout=self.timeout,
            image_tags=dict(self.image_tags),
            no_cache=self.no_cache,
        )

    def run_device(self, cells: queue.SimpleQueue[tuple[SweepCell, CellResult]]) -> None:
        """Cells of one device, one after another, until its queue is empty."""
        while not self.cancel.cancelled:
            try:
                cell, result = cells.get_nowait()
            except queue.Empty:
                return
            self.run_cell(cell, result)

    def run_cell(self, cell: SweepCell, result: CellResult) -> None:
        from edgehub.acquire.labgrid_pool import avoiding, last_held_place

        died = self._attempt(cell, result)
        if died is not None and self.boards.get(cell.device, 1) > 1 and not self.cancel.cancelled:
            place = last_held_place()
            result.retried = f"retried on another board after {place or 'its board'}: {died}"
            self.notify(result)
            with avoiding({place} if place else set()):
                self._attempt(cell, result)
        self.notify(result)

    def _attempt(self, cell: SweepCell, result: CellResult) -> str | None:
        """Run ``cell`` once; the error when it failed because its board died."""
        with self.project.context() as ctx:
            try:
                self._recorded(ctx, cell, result)
            except OperationCancelled:
                result.status, result.error = "KILLED", "cancelled"
            except Exception as error:  # a failed cell is reported; the others go on
                result.status, result.error = "FAILED", f"{type(error).__name__}: {error}"
                if _board_died(error):
                    return result.error
        return None

    def _recorded(self, ctx: HubContext, cell: SweepCell, result: CellResult) -> None:
        with ctx.open_run(CELL_RUN, cell.label, parent_run_id=self.parent) as run:
            result.run_id, result.status = run.run_id, "RUNNING"
            ctx.client.log_params(
                {"model": result.model, "device": cell.device, "runtime": cell.runtime}
            )
            ctx.client.log_params({f"set.{k}": value_text(v) for k, v in cell.settings})
            if self.cell_params:
                ctx.client.log_params(self.cell_params)
            if result.retried:
                ctx.client.log_param("retried", result.retried)
            self.notify(result)
            self.cancel.check()
            report = execute(
                self.project,
                self.request(cell, run.run_id),
                subscriber=self.subscriber,
                cancel=self.cancel,
            )
            _headline(result, report)
            result.status = "FINISHED"
            ctx.client.log_metrics(_metrics(result))
            ctx.client.log_param("cell", json.dumps(result.to_dict()))


def _board_died(error: Exception) -> bool:
    """Whether ``error`` says the board went away: its connection failed or dropped (as an
    edgehub error, or as the SSH library's own), or it failed its health check."""
    from edgehub.errors import DeviceUnhealthyError, EdgehubError, HostKeyError, SSHConnectionError

    if isinstance(error, HostKeyError):
        return False
    if isinstance(error, (SSHConnectionError, DeviceUnhealthyError)):
        return True
    dropped = isinstance(error, (ConnectionError, EOFError))
    return not isinstance(error, EdgehubError) and (
        dropped or type(error).__module__.startswith("paramiko")
    )


def _queues(
    sweep: SweepSession, pending: list[tuple[SweepCell, CellResult]]
) -> list[queue.SimpleQueue[tuple[SweepCell, CellResult]]]:
    """A queue of cells per device, once for each board it can be held on at once
    (`edgehub.acquire.board_count`: a pool device's usable places, a cell holding each)."""
    from edgehub.acquire import board_count

    by_device: dict[str, queue.SimpleQueue[tuple[SweepCell, CellResult]]] = {}
    for cell, result in pending:
        by_device.setdefault(cell.device, queue.SimpleQueue()).put((cell, result))
    sweep.boards = {name: board_count(sweep.project.config, name) for name in by_device}
    return [q for name, q in by_device.items() for _ in range(sweep.boards[name])]


def _wait_all(futures: list[Any], cancel: Cancellation) -> None:
    """Wait in short steps so that Ctrl-C reaches the main thread; then stop every cell."""
    try:
        remaining = set(futures)
        while remaining:
            done, remaining = wait(remaining, timeout=0.2, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()
    except BaseException:
        cancel.cancel()
        wait(futures)
        raise


Pending = list[tuple["SweepCell", CellResult]]


class CellExecutor(Protocol):
    """Runs a sweep's pending cells: fills in each `CellResult` and calls ``session.notify``
    as it changes; stops when ``session.cancel`` is cancelled, or on Ctrl-C (re-raised)."""

    def run_cells(self, session: SweepSession, pending: Pending) -> None: ...


class LocalExecutor:
    """Cells in this process: a thread per device (per board of a pool), one cell at a time."""

    def run_cells(self, session: SweepSession, pending: Pending) -> None:
        queues = _queues(session, pending)
        with ThreadPoolExecutor(max(1, len(queues)), "edgehub-sweep") as pool:
            futures = [pool.submit(session.run_device, q) for q in queues]
            _wait_all(futures, session.cancel)


def _check_options(grid: SweepGrid, cells: list[SweepCell]) -> None:
    """Every runtime known and every option value valid, before anything runs."""
    from edgehub.core.runtimes import get_runtime

    distinct = {(cell.runtime, json.dumps(cell.settings, default=str)): cell for cell in cells}
    for cell in distinct.values():
        components = step_components(get_runtime(cell.runtime), grid.step)
        try:
            option_values(cell.settings, components, given_as="sweep option")
        except UsageError as error:
            raise UsageError(f"{error} (runtime {cell.runtime})") from None


def run_sweep(
    project: Project,
    grid: SweepGrid,
    *,
    resume: bool = False,
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
    on_cell: CellCallback | None = None,
    lease_timeout: float | None = None,
    timeout: float | None = None,
    tags: dict[str, str] | None = None,
    image_tags: dict[str, str] | None = None,
    no_cache: bool = False,
    executor: CellExecutor | None = None,
) -> SweepReport:
    """Run every cell of ``grid``; a `SweepReport` with a result per cell. Raises
    `OperationCancelled` (the parent run KILLED) when cancelled or interrupted. A cell taking
    longer than ``timeout`` seconds is stopped and FAILED; the others go on. ``tags`` go on the
    sweep run; ``image_tags`` (runtime -> image) pin the cells' images and ``no_cache`` makes
    their compiles build (a rerun's). ``executor`` runs the cells (default: `LocalExecutor`)."""

    grid.check()
    cells = grid.cells()
    _check_options(grid, cells)
    cancel = cancel or Cancellation()
    identities = _identities(project, grid.devices)
    results = [_result(cell, grid.step, identities) for cell in cells]
    earlier, earlier_by_name = _finished_cells(project) if resume else ({}, {})
    with project.context(subscriber) as ctx:
        unknown = sorted({c.device for c in cells} - set(ctx.devices))
        if unknown:
            raise UsageError(
                f"sweep device(s) {', '.join(unknown)} not in {ctx.device_source}; known: "
                f"{', '.join(ctx.devices)}"
            )
        with ctx.open_run(SWEEP_RUN, f"sweep of {len(cells)} cells") as parent:
            report = SweepReport(parent.run_id, "RUNNING", grid.step, results)
            for name, value in (tags or {}).items():
                ctx.client.log_tag(name, value)
            ctx.client.log_params(
                {
                    "step": grid.step,
                    "models": [str(m) for m in grid.models],
                    "devices": list(grid.devices),
                    "runtimes": list(grid.runtimes),
                    "vary": json.dumps(grid.vary, default=str),
                    "set": json.dumps(grid.settings, default=str),
                    "model_settings": json.dumps(
                        {str(m): v for m, v in grid.model_settings.items() if v}, default=str
                    ),
                    "cells": len(cells),
                }
            )
            sweep = SweepSession(
                project, grid, parent.run_id, subscriber, cancel, on_cell, lease_timeout, timeout
            )
            sweep.image_tags, sweep.no_cache = dict(image_tags or {}), no_cache
            pending, noted = [], set()
            for cell, result in zip(cells, results, strict=True):
                done = earlier.get(result.key)
                if done is not None:
                    _reuse(result, done)
                    sweep.notify(result)
                    continue
                other = earlier_by_name.get(result.name_key or "")
                if other is not None and result.device not in noted:
                    noted.add(result.device)
                    ctx.events.warning(_changed_note(result, other))
                pending.append((cell, result))
            try:
                (executor or LocalExecutor()).run_cells(sweep, pending)
                cancel.check()
            finally:
                report.status = "KILLED" if cancel.cancelled else "FINISHED"
                ctx.client.log_metrics(
                    {
                        "cells_finished": sum(r.status == "FINISHED" for r in results),
                        "cells_failed": len(report.failed),
                    }
                )
                log_json(ctx, "sweep.json", report.to_dict(), name="sweep", indent=2)
    return report
