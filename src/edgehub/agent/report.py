"""Progress lines on stderr and the warnings that go into the result."""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO


class Report:
    """Writes one flushed progress line per call to stderr and collects warnings.

    The host streams stderr live, so every line is flushed as soon as it is written.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.warnings: list[str] = []
        self.started = time.monotonic()

    def info(self, message: str) -> None:
        self._write(message)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
        self._write(f"warning: {message}")

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line.rstrip("\n") + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is best effort
            pass


class WarningCollector(logging.Handler):
    """Forwards WARNING+ log records (e.g. from onnxruntime.quantization) into a Report."""

    def __init__(self, report: Report) -> None:
        super().__init__(level=logging.WARNING)
        self.report = report

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage().strip()
        except Exception:
            return
        if message:
            self.report.warn(f"{record.name}: {message}" if record.name != "root" else message)


def install_log_capture(report: Report) -> WarningCollector:
    """Route library logging to ``report`` instead of Python's last-resort stderr handler."""
    handler = WarningCollector(report)
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    return handler
