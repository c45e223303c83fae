"""Lines from runners reach every subscriber live, tagged with their run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.errors import CommandCancelled, CommandError, CommandTimeout
from edgehub.events import EventSink, LogEvent, use_sink
from edgehub.runners.local import LocalCommandRunner


def test_lines_stream_to_every_subscriber_tagged_with_the_run() -> None:
    seen_a: list[LogEvent] = []
    seen_b: list[LogEvent] = []

    @hub_run("CUSTOM", name="echoer")
    def echoer(ctx: HubContext) -> str:
        ctx.devices["local"].runner.run(["sh", "-c", "echo one; echo two >&2"])
        return ctx.run_log.run_id  # type: ignore[union-attr]

    with HubContext(project_name="p") as ctx:
        ctx.events.subscribe(seen_a.append)
        ctx.events.subscribe(seen_b.append)
        run_id = echoer(ctx)
    lines = [(e.kind, e.message, e.run_id) for e in seen_a if e.kind in ("stdout", "stderr")]
    assert ("stdout", "one", run_id) in lines and ("stderr", "two", run_id) in lines
    assert seen_a == seen_b


def test_lines_arrive_while_the_command_runs(tmp_path: Path) -> None:
    sink = EventSink()
    lines: list[str] = []
    sink.subscribe(lambda e: lines.append(e.message))
    sink.subscribe(lambda e: (tmp_path / e.message).touch())
    # the command writes its second line only once the first has arrived, or after 60 s: a first
    # line kept until the command ends shows as "second: first not seen"
    script = (
        "echo first; i=0; while [ ! -e first ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); "
        'done; [ -e first ] && echo "second: first seen" || echo "second: first not seen"'
    )
    with use_sink(sink):
        LocalCommandRunner().run(["sh", "-c", script], cwd=tmp_path)
    assert lines == ["first", "second: first seen"]


def test_hidden_commands_do_not_stream_and_failures_raise() -> None:
    sink = EventSink()
    got: list[LogEvent] = []
    sink.subscribe(got.append)
    runner = LocalCommandRunner()
    with use_sink(sink):
        assert runner.run(["echo", "quiet"], hide=True).stdout == "quiet\n"
        with pytest.raises(CommandError, match=r"exited with code 3: boom"):
            runner.run(["sh", "-c", "echo boom >&2; exit 3"], hide=True)
        assert runner.run(["false"], check=False).returncode == 1
    assert got == []


def test_timeout_and_cancel_stop_the_command() -> None:
    runner = LocalCommandRunner()
    start = time.monotonic()
    with pytest.raises(CommandTimeout):
        runner.run(["sleep", "30"], timeout=0.3)
    sink, started = EventSink(), threading.Event()
    sink.subscribe(lambda e: started.set())

    def cancel_once_started() -> None:
        if started.wait(60):
            runner.cancel()

    threading.Thread(target=cancel_once_started, daemon=True).start()
    with use_sink(sink), pytest.raises(CommandCancelled):  # cancelled once it runs
        runner.run(["sh", "-c", "echo started; exec sleep 30"])
    assert time.monotonic() - start < 20  # far below the commands' 30 s
    assert runner.run(["echo", "ok"]).stdout == "ok\n"
