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
            self.lines: list[str] = []
            self.errors: list[str] = []
            self.started = time.monotonic()

        def log(self, severity: Any, msg: str) -> None:
            level = str(getattr(severity, "name", severity)).split(".")[-1]
            text = str(msg).rstrip()
            self.lines.append(f"[{time.monotonic() - self.started:8.3f}] [{level}] {text}")
            if level in ("ERROR", "INTERNAL_ERROR"):
                self.errors.append(text)
                report.info(f"tensorrt: error: {text}")
            elif level == "WARNING":
                report.info(f"tensorrt: warning: {text}")

        def write(self, path: str) -> None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(self.lines) + "\n")

    return BuildLogger()
