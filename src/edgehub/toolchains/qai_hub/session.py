"""Per-context state of the qai_hub provider: the checked client, the service's device list
(fetched once per `HubContext`) and the upload cache; and the job plan of the current call
(jobs to resume, devices to fan out to)."""

from __future__ import annotations

import contextvars
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from edgehub.toolchains.qai_hub.client import ready_client

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.toolchains.qai_hub.uploads import UploadCache


@dataclass
class QAIHubSession:
    """What one `HubContext` keeps for Qualcomm AI Hub."""

    hub: Any
    devices: list[Any] | None = None
    uploads: UploadCache | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_sessions: weakref.WeakKeyDictionary[HubContext, QAIHubSession] = weakref.WeakKeyDictionary()
_sessions_lock = threading.Lock()


def session_for(ctx: HubContext) -> QAIHubSession:
    """The context's session, created (client checked, upload cache opened) on first use."""
    with _sessions_lock:
        session = _sessions.get(ctx)
        if session is None:
            from edgehub.toolchains.qai_hub.uploads import UploadCache

            session = QAIHubSession(hub=ready_client())
            session.uploads = UploadCache(ctx.project_dir / "qai_hub" / "uploads.json")
            _sessions[ctx] = session
        return session


@dataclass
class JobPlan:
    """Jobs a component call attaches to instead of submitting new ones: ``resume``, by job
    kind (`resume_job`); a fan-out's to ``devices``, submitted together on first need and kept
    in ``submitted`` by (kind, request key) and device name."""

    resume: dict[str, Any] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    submitted: dict[tuple[str, str], dict[str | None, Any]] = field(default_factory=dict)


_plan: contextvars.ContextVar[JobPlan | None] = contextvars.ContextVar(
    "edgehub_qai_hub_plan", default=None
)


def current_plan() -> JobPlan | None:
    return _plan.get()


@contextmanager
def job_plan(plan: JobPlan) -> Iterator[JobPlan]:
    """Make ``plan`` the current job plan inside the ``with`` block."""
    token = _plan.set(plan)
    try:
        yield plan
    finally:
        _plan.reset(token)
