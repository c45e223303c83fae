"""The TensorRT build logger: what it keeps of each message and the build log it writes.

TensorRT's bindings are not on the host, so the logger is made over a stand-in ``ILogger`` base
class and severities shaped like the bindings' enum (a ``value``) or plain numbers; the real
logger runs in every TensorRT integration test, whose build log is checked there."""

from __future__ import annotations

import io
import time
import types
from pathlib import Path

import pytest

from edgehub.agent.report import Report
from edgehub.agent.trt import logger as trt_logger


class _Severity:
    def __init__(self, value: int) -> None:
        self.value = value


class _ILogger:
    def __init__(self) -> None:
        pass


def test_messages_are_kept_reported_and_written_by_level_and_millisecond(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stream = io.StringIO()
    report = Report(stream)
    clock = iter([100.0, 100.0004, 100.0009, 100.0011, 101.2345, 101.2349, 101.5])
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    logger = trt_logger.make_logger(types.SimpleNamespace(ILogger=_ILogger), report)
    logger.log(_Severity(3), "parsed")
    logger.log(_Severity(3), "same millisecond")
    logger.log(_Severity(4), "a table row\n")
    logger.log(_Severity(2), "slow tactic ")
    logger.log(1, "no engine")  # a severity without ``value``: its number
    logger.log(_Severity(0), "internal")
    assert logger.errors == ["no engine", "internal"]
    assert stream.getvalue().splitlines() == [
        "tensorrt: warning: slow tactic",
        "tensorrt: error: no engine",
        "tensorrt: error: internal",
    ]
    path = tmp_path / "build.log"
    logger.write(str(path))
    assert path.read_text() == (
        "[   0.000] [INFO] parsed\n"
        "[   0.000] [INFO] same millisecond\n"
        "[   0.001] [VERBOSE] a table row\n"
        "[   1.234] [WARNING] slow tactic\n"
        "[   1.234] [ERROR] no engine\n"
        "[   1.500] [INTERNAL_ERROR] internal\n"
    )


def test_an_empty_log_is_an_empty_file(tmp_path: Path) -> None:
    logger = trt_logger.make_logger(types.SimpleNamespace(ILogger=_ILogger), Report(io.StringIO()))
    path = tmp_path / "build.log"
    logger.write(str(path))
    assert path.read_text() == ""
