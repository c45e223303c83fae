"""Progress lines on stderr and the warnings that go into the result."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO


class Report:
    """Writes one flushed progress line per call to stderr and collects warnings.

    The host streams stderr live, so every line is flushed as soon as it is written.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.warnings: list[str] = []
        self.started = time.monotonic()
        # where random inputs had dynamic dims guessed: added to a RuntimeFailure's message
        self.guessed_shapes = ""

    def info(self, message: str) -> None:
        try:
            self.stream.write(message.rstrip("\n") + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is best effort
            pass

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
        self.info(f"warning: {message}")


def _add_collector(report: Report) -> Callable[[], None]:
    """Forward WARNING+ log records (e.g. onnxruntime.quantization's) into ``report``; returns
    what undoes it."""
    import logging

    class WarningCollector(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                message = record.getMessage().strip()
            except Exception:
                return
            if message:
                report.warn(f"{record.name}: {message}" if record.name != "root" else message)

    handler = WarningCollector(level=logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    return lambda: root.removeHandler(handler)


class _WhenLoggingLoads:
    """An import hook (a ``sys.meta_path`` finder) that runs ``then`` right after the
    ``logging`` module has been executed, the first time anything imports it."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "logging":
            return None
        self.remove()
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        load = getattr(loader, "exec_module", None)
        if load is None:  # not a plain source module: hook nothing
            return spec
        then = self.then

        def exec_module(module: Any) -> None:
            load(module)
            then()

        loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def install_log_capture(report: Report) -> Callable[[], None]:
    """Route library logging to ``report`` instead of Python's last-resort stderr handler;
    returns what undoes it. Where nothing has imported ``logging`` yet, the handler goes in
    when something does (`_WhenLoggingLoads`): a command whose libraries never log does not
    load the module, milliseconds of every cold job's start."""
    if "logging" in sys.modules:
        return _add_collector(report)
    removers: list[Callable[[], None]] = []
    hook = _WhenLoggingLoads(lambda: removers.append(_add_collector(report)))
    sys.meta_path.insert(0, hook)

    def uninstall() -> None:
        hook.remove()
        for remove in removers:
            remove()

    return uninstall
