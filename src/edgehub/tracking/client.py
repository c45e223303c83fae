"""`Client`: what providers log through (``ctx.client``), written to the store as it happens."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from edgehub.errors import OperationCancelled, StorageError, UsageError
from edgehub.events import EventSink, LogEvent
from edgehub.ids import uuid4_hex
from edgehub.limits import LogLimits
from edgehub.paths import is_remote
from edgehub.tracking.artifacts import path_size
from edgehub.tracking.db import translate_storage_errors
from edgehub.tracking.full_disk import disk_full, full_disk_error, keep_only_log
from edgehub.tracking.log_file import RunLogFile
from edgehub.tracking.modes import restrict
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam, RunLog
from edgehub.tracking.run_type import RunType
from edgehub.tracking.store import RunStore
from edgehub.user_files import ensure_room, regular_file


def new_run_id() -> str:
    return uuid4_hex()


class Client:
    """Logs params, metrics, artifacts and tags of the current run of this thread."""

    def __init__(self, store: RunStore, project: str, events: EventSink) -> None:
        self.store = store
        self.project = project
        self.events = events
        self._local = threading.local()
        self.run_history: list[RunLog] = []
        self._pending: dict[str, list[LoggedArtifact]] = {}
        # resolved once: the store's artifact folder, and each open run's own folder
        self._store_real: Path | None = None
        self._run_real: dict[str, Path] = {}

    # -- the current run -----------------------------------------------------------------
    @property
    def current_run_log(self) -> RunLog | None:
        stack: list[RunLog] = getattr(self._local, "stack", [])
        return stack[-1] if stack else None

    @property
    def latest_run_log(self) -> RunLog | None:
        return self.run_history[-1] if self.run_history else None

    def _run(self) -> RunLog:
        run = self.current_run_log
        if run is None:
            raise RuntimeError(
                "no active run: log inside a component's provider or a @hub_run function"
            )
        return run

    @contextmanager
    def start_run(
        self,
        run_type: RunType | str,
        name: str,
        *,
        component: str | None = None,
        parent_run_id: str | None = None,
        tags: dict[str, str] | None = None,
        device: str | None = None,
        environment: dict[str, Any] | None = None,
    ) -> Iterator[RunLog]:
        """Open a run with its own directory; close it FINISHED, FAILED or KILLED. The run,
        its ``tags`` and ``environment`` are recorded in one transaction, and so are the
        artifacts stored at its end with its status.

        Files from outside the run (a user's model) are copied into the store only when the
        run ends FINISHED, i.e. after the component accepted them; until then, and for a run
        that fails, only their path is recorded."""
        log_limits = LogLimits.from_env()  # a bad setting is refused before the run exists
        run_id = new_run_id()
        started = time.time()
        stamp = datetime.fromtimestamp(started).strftime("%Y%m%d-%H%M%S-%f")
        safe_name = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]
        run_dir = self.store.root / "runs" / f"{safe_name}_{stamp}_{run_id[:8]}"
        with translate_storage_errors(run_dir.parent, "create a directory for the run"):
            run_dir.mkdir(mode=0o700, parents=True)  # private, as the store
        fields: dict[str, Any] = {  # the run's, as a `RunLog` and as the store records it
            "run_id": run_id,
            "name": name,
            "run_type": str(RunType.coerce(run_type)),
            "project": self.project,
            "component": component,
            "parent_run_id": parent_run_id,
            "started_at": started,
            "artifact_dir": run_dir,
        }
        run = RunLog(**fields)
        stack: list[RunLog] = getattr(self._local, "stack", [])
        try:
            with self.store.batch():
                self.store.create_run(**fields, device=device)
                for key, value in (tags or {}).items():
                    self.log_tag_for(run, key, value)
                if environment:
                    self._log_environment_for(run, environment)
        except StorageError:
            run_dir.rmdir()  # nothing recorded, nothing left behind
            raise
        self._local.stack = [*stack, run]
        previous_run_id = self.events.run_id
        self.events.run_id = run_id
        log_path = run_dir / "run.log"
        log_file = RunLogFile(log_path, log_limits)
        lock = threading.Lock()

        def record(event: LogEvent) -> None:
            if event.run_id != run_id or event.kind == "progress":
                return
            with lock:  # every line of a tool's output passes here: no more than needed
                if not log_file.closed:
                    try:
                        log_file.write(f"[{event.kind}] {event.message}\n")
                    except OSError:  # e.g. a full disk: the run goes on, its log stops
                        with suppress(OSError):
                            log_file.close()

        unsubscribe = self.events.subscribe(record)
        status, error = "FINISHED", None
        stored: list[LoggedArtifact] = []  # outside files copied at the end, to record
        try:
            yield run
            self._store_pending(run, stored)
        except (KeyboardInterrupt, OperationCancelled):
            status, error = "KILLED", "interrupted"
            raise
        except BaseException as exc:
            full = disk_full(exc)
            if full:  # partial copies go, so that the end of the run can be recorded
                keep_only_log(run_dir)
            clear = None
            if full and not isinstance(exc, StorageError):
                what = f"the results of run {run_id[:8]} ({name})"
                clear = full_disk_error(exc, run_dir, self.store.root, what)
            shown = clear or exc
            status, error = "FAILED", f"{type(shown).__name__}: {shown}"
            self.events.emit(LogEvent(kind="error", message=str(shown), run_id=run_id))
            if clear is not None:
                raise clear from exc
            raise
        finally:
            self._pending.pop(run_id, None)
            unsubscribe()
            with lock, suppress(OSError):
                log_file.close()
            with suppress(OSError):
                restrict(run_dir)  # what the run wrote in its folder: private, as the store
            try:
                with self.store.batch():  # the last records and the end: one transaction
                    for artifact in stored:
                        self._record(run, artifact)
                    if log_path.stat().st_size:  # else, or failing, it stays in the run's folder
                        with suppress(OSError, StorageError):
                            self._store_artifact(run, log_path, name="log")
                    run.status, run.error, run.ended_at = status, error, time.time()
                    self.store.end_run(
                        run_id,
                        status,
                        ended_at=run.ended_at,
                        output_type=run.output_type,
                        error=error,
                    )
            except StorageError:
                if status == "FINISHED":
                    raise
                # the error on its way out says more; readers see the run KILLED once we end
            self._run_real.pop(run_id, None)
            self._local.stack = stack
            self.events.run_id = previous_run_id
            self.run_history.append(run)

    # -- logging -------------------------------------------------------------------------
    def log_param(self, name: str, value: Any) -> None:
        self._param_for(self._run(), name, value, time.time())

    def _param_for(self, run: RunLog, name: str, value: Any, now: float) -> None:
        run.params[name] = LoggedParam(name=name, value=value, logged_at=now)
        self.store.log_param(run.run_id, name, value, now)

    def log_params(self, values: dict[str, Any]) -> None:
        with self.store.batch():
            for name, value in values.items():
                self.log_param(name, value)

    def batch(self) -> AbstractContextManager[None]:
        """Record what is logged inside the block in one transaction when it ends (see
        `RunStore.batch`): for a burst of records, such as a provider's results."""
        return self.store.batch()

    def log_metric(self, name: str, value: float, step: int | None = None) -> None:
        run = self._run()
        now = time.time()
        _remember_metric(run, LoggedMetric(name=name, value=float(value), step=step, logged_at=now))
        self.store.log_metric(run.run_id, name, float(value), step, now)

    def log_metrics(self, values: dict[str, float]) -> None:
        self._metrics_for(self._run(), values, time.time())

    def _metrics_for(self, run: RunLog, values: dict[str, float], now: float) -> None:
        for name, value in values.items():
            _remember_metric(run, LoggedMetric(name=name, value=float(value), logged_at=now))
        self.store.log_metrics(run.run_id, values, now)

    def annotate(
        self, run: RunLog, params: dict[str, Any], metrics: dict[str, float] | None = None
    ) -> None:
        """Add params and metrics to ``run`` after it ended (what a caller did around it)."""
        now = time.time()
        with self.store.batch():
            for name, value in params.items():
                self._param_for(run, name, value, now)
            if metrics:
                self._metrics_for(run, metrics, now)

    def log_tag(self, name: str, value: str) -> None:
        self.log_tag_for(self._run(), name, value)

    def log_tag_for(self, run: RunLog, name: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"tag {name!r} must be a string, got {type(value).__name__}")
        run.tags[name] = value
        self.store.log_tag(run.run_id, name, value)

    def log_environment(self, values: dict[str, Any]) -> None:
        """What the run ran on: image digest, toolchain versions, host or device description."""
        self._log_environment_for(self._run(), values)

    def _log_environment_for(self, run: RunLog, values: dict[str, Any]) -> None:
        clean = {key: str(value) for key, value in values.items() if value is not None}
        run.environment.update(clean)
        self.store.log_environment(run.run_id, clean)

    def log_artifact(
        self,
        file_path: Path | PurePosixPath | str | LoggedArtifact,
        name: str | None = None,
        file_name: str | None = None,
        run_id: str | None = None,
        *,
        ctx: object = None,  # accepted as the seed API has it; not needed to record
        device_name: str | None = None,
    ) -> LoggedArtifact:
        """Record a file or directory. Local files are stored by content; remote ones by path."""
        run = self._run()
        if run_id is not None and run_id != run.run_id:
            raise ValueError("log_artifact can only log to the current run")
        if isinstance(file_path, LoggedArtifact):
            if file_path.is_remote:
                return self._record_remote(
                    run, file_path.remote(), name, file_name, file_path.device
                )
            file_path = file_path.local()
        if is_remote(file_path):
            return self._record_remote(run, PurePosixPath(file_path), name, file_name, device_name)
        return self._store_artifact(run, Path(file_path), name=name, file_name=file_name)

    def relog_artifact(self, artifact: LoggedArtifact) -> LoggedArtifact:
        """Record on the current run a file stored for an earlier run, as it was recorded
        there (same content, same stored file: nothing copied or read, see
        `ArtifactStore.holds`); a file the store does not hold so is logged afresh."""
        run = self._run()
        path = Path(artifact.local())
        if not (
            artifact.is_stored
            and artifact.sha256 is not None
            and self.store.artifacts.holds(path, artifact.sha256, artifact.file_size)
        ):
            return self.log_artifact(path, name=artifact.name)
        return self._remember(run, replace(artifact, id=uuid4_hex(), logged_at=time.time()))

    def _store_artifact(
        self, run: RunLog, path: Path, *, name: str | None, file_name: str | None = None
    ) -> LoggedArtifact:
        """Store a file the run made (or one already in the store) now; defer any other."""
        if not path.exists():
            raise FileNotFoundError(f"cannot log artifact {path}: no such file or directory")
        regular_file(path, "artifact", UsageError, directory_ok=True)  # no FIFO, device, socket
        real, store = path.resolve(), self._store_folder()
        if not self._is_own(run, real, store):
            return self._defer(run, path.absolute(), name=name, file_name=file_name)
        fresh = not real.is_relative_to(store)
        stored, sha, size = self.store.artifacts.add(path, file_name, fresh=fresh, checked=True)
        return self._remember(run, _local_artifact(stored, name, size, sha))

    def _is_own(self, run: RunLog, real: Path, store: Path) -> bool:
        """Made by the run (inside its directory), or already stored content (``real``: the
        file's resolved path; ``store``: the store's, resolved)."""
        if real.is_relative_to(store):
            return True
        if run.artifact_dir is None:
            return False
        folder = self._run_real.get(run.run_id)
        if folder is None:
            folder = self._run_real[run.run_id] = run.artifact_dir.resolve()
        return real.is_relative_to(folder)

    def _store_folder(self) -> Path:
        """The store's artifact folder, resolved (once: it stays where the store was opened)."""
        if self._store_real is None:
            self._store_real = self.store.artifacts.root.resolve()
        return self._store_real

    def _defer(
        self, run: RunLog, path: Path, *, name: str | None, file_name: str | None
    ) -> LoggedArtifact:
        artifact = _local_artifact(path, name, path_size(path), file_name=file_name)
        # stored when the run ends: refuse now what the store's disk could not hold then
        ensure_room(artifact.file_size, self.store.artifacts.root, f"a copy of {path}")
        self._remember(run, artifact)
        self._pending.setdefault(run.run_id, []).append(artifact)
        return artifact

    def _store_pending(self, run: RunLog, copied: list[LoggedArtifact]) -> None:
        """Copy the outside files of a run that ended well into the store; each one copied
        goes to ``copied``, recorded with the run's end."""
        for pending in self._pending.pop(run.run_id, []):
            stored, sha, size = self.store.artifacts.add(pending.local(), pending.file_name)
            artifact = replace(
                pending, file_path=stored, artifact_dir=stored.parent, sha256=sha, file_size=size
            )
            if artifact.name and run.artifacts.get(artifact.name) is pending:
                run.artifacts[artifact.name] = artifact
            run.unnamed_artifacts = [artifact if a is pending else a for a in run.unnamed_artifacts]
            copied.append(artifact)

    def _record_remote(
        self,
        run: RunLog,
        path: PurePosixPath,
        name: str | None,
        file_name: str | None,
        device: str | None,
    ) -> LoggedArtifact:
        artifact = LoggedArtifact(
            id=uuid4_hex(),
            file_name=file_name or path.name,
            file_size=0,
            logged_at=time.time(),
            file_path=path,
            name=name,
            device=device,
        )
        return self._remember(run, artifact)

    def _remember(self, run: RunLog, artifact: LoggedArtifact) -> LoggedArtifact:
        """Add ``artifact`` to ``run`` and record it; returns it."""
        if artifact.name:
            run.artifacts[artifact.name] = artifact
        else:
            run.unnamed_artifacts.append(artifact)
        self._record(run, artifact)
        return artifact

    def _record(self, run: RunLog, artifact: LoggedArtifact) -> None:
        self.store.log_artifact(
            artifact_id=artifact.id,
            run_id=run.run_id,
            name=artifact.name,
            file_name=artifact.file_name,
            sha256=artifact.sha256,
            size=artifact.file_size,
            path=artifact.file_path,
            device=artifact.device,
            logged_at=artifact.logged_at,
        )


def _remember_metric(run: RunLog, metric: LoggedMetric) -> None:
    run.metrics[metric.name] = metric
    run.metric_history.setdefault(metric.name, []).append(metric)


def _local_artifact(
    path: Path, name: str | None, size: int, sha256: str | None = None, file_name: str | None = None
) -> LoggedArtifact:
    """A new record (logged now) of the local file or folder ``path``."""
    return LoggedArtifact(
        id=uuid4_hex(),
        file_name=file_name or path.name,
        file_size=size,
        logged_at=time.time(),
        file_path=path,
        name=name,
        artifact_dir=path.parent,
        sha256=sha256,
    )
