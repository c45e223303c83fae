"""A TensorRT logger that keeps the whole build log and echoes warnings and errors as progress.

TensorRT calls it for every message, tens of thousands in a big verbose build, all while the
build runs: each call does as little as it can (the severity is read as its number, which costs
a third of hashing or comparing the enum; the line is formatted only when the log is written).
"""

from __future__ import annotations

import time
from typing import Any

from ..report import Report

# ILogger.Severity's values, in TensorRT's order (kINTERNAL_ERROR = 0 ... kVERBOSE = 4)
LEVELS = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE")
_WARNING = 2


def severity_number(severity: Any) -> int:
    """The number of a TensorRT severity (its ``value``; ``int()`` where it has none)."""
    value = getattr(severity, "value", None)
    return int(severity) if value is None else int(value)


def make_logger(trt_module: Any, report: Report) -> Any:
    """An ``ILogger`` of ``trt_module`` recording every message TensorRT sends it."""
    monotonic = time.monotonic

    class BuildLogger(trt_module.ILogger):  # type: ignore[misc]
        def __init__(self) -> None:
            trt_module.ILogger.__init__(self)
            # (seconds since the start, severity number, message)
            self.lines: list[tuple[float, int, str]] = []
            self.errors: list[str] = []
            self.started = monotonic()

        def log(self, severity: Any, msg: str) -> None:
            try:
                level = severity.value
            except AttributeError:
                level = severity_number(severity)
            self.lines.append((monotonic(), level, msg))
            if level <= _WARNING:
                text = str(msg).rstrip()
                if level < _WARNING:
                    self.errors.append(text)
                    report.info(f"tensorrt: error: {text}")
                else:
                    report.info(f"tensorrt: warning: {text}")

        def write(self, path: str) -> None:
            """One line per message, ``[seconds.ms] [LEVEL] message``: the prefix is formatted
            once for each run of lines of the same millisecond and level (a build's verbose
            lines come in bursts; formatting each one showed in a big build's time)."""
            start = self.started
            parts: list[str] = []
            key: tuple[int, int] | None = None
            prefix = ""
            for at, level, text in self.lines:
                ms = int((at - start) * 1000)
                if key is None or key[0] != ms or key[1] != level:
                    key = (ms, level)
                    name = LEVELS[level] if 0 <= level < len(LEVELS) else str(level)
                    prefix = f"\n[{ms // 1000:4d}.{ms % 1000:03d}] [{name}] "
                parts.append(prefix)
                parts.append(str(text).rstrip())
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("".join(parts)[1:] + "\n" if parts else "")

    return BuildLogger()
