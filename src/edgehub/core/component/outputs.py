"""Typed outputs of components, filled by field name from what the provider logged."""

from __future__ import annotations

import typing
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from edgehub.core.values import without_none
from edgehub.paths import LocalPath, is_remote
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam, RunLog

if TYPE_CHECKING:
    from edgehub.core.context import HubContext

__all__ = ["CompiledModel", "ComponentOutput", "MissingOutputError"]

T = TypeVar("T", bound="ComponentOutput")
_TRACKED = {LoggedParam: "params", LoggedMetric: "metrics", LoggedArtifact: "artifacts"}
_FRAMEWORK_FIELDS = {"artifact_dir", "devices", "run_log"}


class MissingOutputError(Exception):
    """A required output field was not logged by the provider."""

    def __init__(self, field_name: str, field_type: str) -> None:
        super().__init__(
            f"output field {field_name!r} ({field_type}) was not logged by the run: the "
            f"provider must log it as {field_name!r} or '${field_name}'"
        )
        self.field_name = field_name
        self.field_type = field_type


def _tracked_kind(annotation: Any) -> tuple[type | None, bool]:
    """(the Logged* class, optional?) for an annotation, or (None, False) if untracked."""
    if isinstance(annotation, str):
        text = annotation.replace(" ", "")
        optional = "None" in text or text.startswith("Optional[")
        for cls in _TRACKED:
            name = cls.__name__
            if text in (name, f"{name}|None", f"None|{name}", f"Optional[{name}]"):
                return cls, optional
        return None, False
    plain = without_none(annotation)
    if plain in _TRACKED:  # `LoggedX`, or `LoggedX | None` (optional)
        return plain, plain is not annotation
    return None, False


_HINTS: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def _field_types(cls: type) -> dict[str, Any]:
    """``cls``'s annotations, resolved where they can be (looked up once per class: each
    run's output reads them)."""
    known = _HINTS.get(cls)
    if known is not None:
        return known
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable forward refs in user code: fall back to the raw strings
        hints = {}
        for klass in reversed(cls.__mro__):
            hints.update(getattr(klass, "__annotations__", {}))
    _HINTS[cls] = hints
    return hints


@dataclass(frozen=True, kw_only=True)
class ComponentOutput:
    """Base of every component's output: a typed view over the run's log."""

    artifact_dir: LocalPath | None = None
    devices: dict[str, Any] = field(default_factory=dict)
    run_log: RunLog | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_run_log(cls: type[T], run_log: RunLog, **extra: Any) -> T:
        """Fill tracked fields by name (``$name`` fills ``name``); pass the rest in ``extra``."""
        sources: dict[str, dict[str, Any]] = {
            "params": run_log.params,
            "metrics": run_log.metrics,
            "artifacts": run_log.artifacts,
        }
        hints = _field_types(cls)
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in _FRAMEWORK_FIELDS or f.name in extra:
                continue
            kind, optional = _tracked_kind(hints.get(f.name, f.type))
            if kind is None:
                continue
            table = sources[_TRACKED[kind]]
            plain, internal = table.get(f.name), table.get("$" + f.name)
            if plain is not None and internal is not None:
                raise ValueError(
                    f"ambiguous output field {f.name!r}: the run logged both "
                    f"{f.name!r} and '${f.name}'"
                )
            found = plain if plain is not None else internal
            if found is None and not optional:
                raise MissingOutputError(f.name, kind.__name__)
            values[f.name] = found
        return cls(
            artifact_dir=run_log.artifact_dir,
            devices=dict(run_log.devices),
            run_log=run_log,
            **values,
            **extra,
        )

    @classmethod
    def from_current_run(cls: type[T], ctx: HubContext, **extra: Any) -> T:
        """The output of the run in progress (what providers return)."""
        run_log = ctx.client.current_run_log if ctx.client is not None else None
        if run_log is None:
            raise RuntimeError("No active run in the context.")
        return cls.from_run_log(run_log, **extra)

    @property
    def run_id(self) -> str | None:
        return self.run_log.run_id if self.run_log is not None else None


def parent_run_id(values: Iterable[Any]) -> str | None:
    """The run of the first value that comes from one (a run's output or its `RunLog`): the
    parent of a run given those values."""
    logs = (v.run_log if isinstance(v, ComponentOutput) else v for v in values)
    return next((log.run_id for log in logs if isinstance(log, RunLog)), None)


@dataclass(frozen=True, kw_only=True)
class CompiledModel(ComponentOutput):
    """Base output of every compiler: the compiled model and the model it came from."""

    path: LoggedArtifact
    input: LoggedArtifact | None = None

    @classmethod
    def from_path(cls: type[T], path: Path | PurePosixPath | str, **extra: Any) -> T:
        """Wrap a model file that no tracked run produced (local `Path` or `RemotePath`)."""
        target: Path | PurePosixPath
        if is_remote(path):
            target, size = PurePosixPath(path), 0
        else:
            from edgehub.user_files import regular_file

            target = regular_file(path, "model", directory_ok=True)
            size = target.stat().st_size if target.is_file() else 0
        artifact = LoggedArtifact(
            id="",
            file_name=target.name,
            file_size=size,
            logged_at=0.0,
            file_path=target,
            name="$path",
            device=extra.pop("device", None),
            artifact_dir=target.parent if isinstance(target, Path) else None,
        )
        return cls(path=artifact, **extra)  # type: ignore[call-arg]
