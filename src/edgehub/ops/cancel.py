"""`Cancellation`: stop a running operation from another thread (the TUI, a signal handler)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from edgehub.errors import EdgehubError, OperationCancelled

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


_AGAIN_S = 0.5  # how often a cancelled operation's commands are stopped again


class Cancellation:
    """A handle that a front end keeps while an operation runs in a worker thread.

    `cancel` stops the commands that the operation's context is running (container and remote
    processes included), and those it starts after, until it lets the context go; the
    operation then ends its run KILLED and raises `OperationCancelled`. Cancelling before the
    operation has opened its context stops it as soon as it does. Cancelling with a ``reason``
    (a timeout) stops it the same way, but its run ends FAILED and the operation raises
    ``reason`` instead.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._contexts: list[HubContext] = []
        self._linked: list[Cancellation] = []
        self.reason: EdgehubError | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: EdgehubError | None = None) -> None:
        with self._lock:
            first = not self._event.is_set()
            if first:
                self.reason = reason
            self._event.set()
            contexts, linked = list(self._contexts), list(self._linked)
        self._stop(contexts)
        for other in linked:
            other.cancel()
        if first and contexts:
            threading.Thread(target=self._keep_stopping, name="edgehub-cancel", daemon=True).start()

    def _stop(self, contexts: list[HubContext]) -> None:
        for ctx in contexts:
            ctx.cancel(self.reason)

    def _keep_stopping(self) -> None:
        """Every half second, stop again what the operation's contexts run: a command that
        started after the cancel (the step's next one) is stopped too. Ends once the
        operation has released its contexts (before their clean-up commands run)."""
        while True:
            time.sleep(_AGAIN_S)
            with self._lock:
                contexts = list(self._contexts)
            if not contexts:
                return
            self._stop(contexts)

    def _add(self, items: list[Any], item: Any) -> bool:
        """Append ``item`` to ``items``; True if this one is already cancelled."""
        with self._lock:
            items.append(item)
            return self._event.is_set()

    def _discard(self, items: list[Any], item: Any) -> None:
        with self._lock:
            if item in items:
                items.remove(item)

    def link(self, other: Cancellation) -> Callable[[], None]:
        """Cancel ``other`` too when this one is cancelled; returns the undo."""
        if self._add(self._linked, other):
            other.cancel()
        return functools.partial(self._discard, self._linked, other)

    def bind(self, ctx: HubContext) -> None:
        """Called by an operation once its context is open."""
        if self._add(self._contexts, ctx):
            ctx.cancel(self.reason)
        self.check()

    def release(self, ctx: HubContext) -> None:
        self._discard(self._contexts, ctx)

    @contextmanager
    def bound(self, ctx: HubContext) -> Iterator[HubContext]:
        """`bind` ``ctx`` for the ``with`` block, `release` it after."""
        self.bind(ctx)
        try:
            yield ctx
        finally:
            self.release(ctx)

    def check(self) -> None:
        """Raise `OperationCancelled` (or the reason given) if `cancel` was called (between
        steps)."""
        if self._event.is_set():
            raise self.reason or OperationCancelled("cancelled")

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True if cancelled meanwhile."""
        return self._event.wait(timeout)
