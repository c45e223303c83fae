"""The log/event sink: lines and progress from runners and providers, fanned out to subscribers.

A `HubContext` owns one `EventSink` and makes it the *current* sink while it is active, so a
runner can publish without being handed the context (`current_sink().line(...)`). The CLI
subscribes a printer to stderr; the TUI subscribes a queue and shows the events live.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class LogEvent:
    """One line of log or one progress update.

    ``kind`` is ``"stdout"`` / ``"stderr"`` for a tool's output, ``"info"`` / ``"warning"`` for
    edgehub's own messages, and ``"progress"`` when ``done``/``total`` are set.
    """

    kind: str
    message: str
    run_id: str | None = None
    time: float = 0.0
    done: float | None = None
    total: float | None = None


Subscriber = Callable[[LogEvent], None]


class EventSink:
    """Thread-safe fan-out of `LogEvent`s, tagged with the run that is current when emitted."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._local = threading.local()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it again."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    @property
    def run_id(self) -> str | None:
        """The run this thread's events are tagged with when the emitter does not name one."""
        value: str | None = getattr(self._local, "run_id", None)
        return value

    @run_id.setter
    def run_id(self, value: str | None) -> None:
        self._local.run_id = value

    def emit(self, event: LogEvent) -> None:
        """Deliver an event to every subscriber; a failing subscriber does not stop the others."""
        if event.run_id is None or not event.time:
            # built directly: `dataclasses.replace` costs half a microsecond more per line of a
            # flooding tool's output, and every line passes here
            event = LogEvent(
                kind=event.kind,
                message=event.message,
                run_id=event.run_id or self.run_id,
                time=event.time or time.time(),
                done=event.done,
                total=event.total,
            )
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:  # not `suppress`: a context manager per line and subscriber costs more
                callback(event)
            except Exception:
                pass

    def line(self, kind: str, message: str, run_id: str | None = None) -> None:
        """Publish one line of a tool's output (``kind`` is ``stdout`` or ``stderr``)."""
        self.emit(LogEvent(kind=kind, message=message.rstrip("\n"), run_id=run_id))

    def info(self, message: str) -> None:
        self.emit(LogEvent(kind="info", message=message))

    def warning(self, message: str) -> None:
        self.emit(LogEvent(kind="warning", message=message))

    def progress(self, message: str, done: float, total: float | None) -> None:
        self.emit(LogEvent(kind="progress", message=message, done=done, total=total))


_NULL_SINK = EventSink()
_current: contextvars.ContextVar[EventSink] = contextvars.ContextVar(
    "edgehub_event_sink", default=_NULL_SINK
)


def current_sink() -> EventSink:
    """The sink of the innermost active context (a sink with no subscribers otherwise)."""
    return _current.get()


@contextmanager
def use_sink(sink: EventSink) -> Iterator[EventSink]:
    """Make ``sink`` the current sink inside the ``with`` block (this thread/context only)."""
    token = _current.set(sink)
    try:
        yield sink
    finally:
        _current.reset(token)
