"""Lines from runners reach every subscriber live, tagged with their run."""

from __future__ import annotations

import threading
import time

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


def test_lines_arrive_while_the_command_runs() -> None:
    sink = EventSink()
    arrivals: list[float] = []
    sink.subscribe(lambda e: arrivals.append(time.monotonic()))
    with use_sink(sink):
        start = time.monotonic()
        LocalCommandRunner().run(["sh", "-c", "echo first; sleep 1; echo second"])
    assert len(arrivals) == 2
    # the first line arrived while the command still ran (a second before its last line), not
    # with it at the end
    assert arrivals[1] - arrivals[0] >= 0.5, [t - start for t in arrivals]


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
    threading.Timer(0.3, runner.cancel).start()
    with pytest.raises(CommandCancelled):
        runner.run(["sleep", "30"])
    assert time.monotonic() - start < 5
    assert runner.run(["echo", "ok"]).stdout == "ok\n"
