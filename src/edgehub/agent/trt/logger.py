"""A TensorRT logger that keeps the whole build log and echoes warnings and errors as progress."""

from __future__ import annotations

import time
from typing import Any

from ..report import Report


def make_logger(trt_module: Any, report: Report) -> Any:
    """An ``ILogger`` of ``trt_module`` recording every message TensorRT sends it."""

    class BuildLogger(trt_module.ILogger):  # type: ignore[misc]
        def __init__(self) -> None:
            trt_module.ILogger.__init__(self)
            # (seconds since the start, level, message): a big build sends tens of thousands
            # of verbose lines, formatted once, when written (a few µs each saved)
            self.lines: list[tuple[float, str, str]] = []
            self.errors: list[str] = []
            self.started = time.monotonic()
            self._levels: dict[Any, str] = {}

        def log(self, severity: Any, msg: str) -> None:
            level = self._levels.get(severity)
            if level is None:
                level = str(getattr(severity, "name", severity)).split(".")[-1]
                self._levels[severity] = level
            self.lines.append((time.monotonic(), level, msg))
            if level in ("ERROR", "INTERNAL_ERROR"):
                self.errors.append(str(msg).rstrip())
                report.info(f"tensorrt: error: {self.errors[-1]}")
            elif level == "WARNING":
                report.info(f"tensorrt: warning: {str(msg).rstrip()}")

        def write(self, path: str) -> None:
            start = self.started
            with open(path, "w", encoding="utf-8") as fh:
                fh.writelines(
                    f"[{at - start:8.3f}] [{level}] {str(text).rstrip()}\n"
                    for at, level, text in self.lines
                )

    return BuildLogger()
