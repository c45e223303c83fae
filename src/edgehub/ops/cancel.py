"""`Cancellation`: stop a running operation from another thread (the TUI, a signal handler)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from edgehub.errors import OperationCancelled

if TYPE_CHECKING:
    from edgehub.core.context import HubContext

__all__ = ["Cancellation"]


class Cancellation:
    """A handle that a front end keeps while an operation runs in a worker thread.

    `cancel` stops the commands that the operation's context is running (container and remote
    processes included); the operation then ends its run KILLED and raises
    `OperationCancelled`. Cancelling before the operation has opened its context stops it as
    soon as it does.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._contexts: list[HubContext] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            contexts = list(self._contexts)
        for ctx in contexts:
            ctx.cancel()

    def bind(self, ctx: HubContext) -> None:
        """Called by an operation once its context is open."""
        with self._lock:
            self._contexts.append(ctx)
            cancelled = self._event.is_set()
        if cancelled:
            ctx.cancel()
        self.check()

    def release(self, ctx: HubContext) -> None:
        with self._lock:
            if ctx in self._contexts:
                self._contexts.remove(ctx)

    def check(self) -> None:
        """Raise `OperationCancelled` if `cancel` was called (between steps)."""
        if self._event.is_set():
            raise OperationCancelled("cancelled")

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True if cancelled meanwhile."""
        return self._event.wait(timeout)
