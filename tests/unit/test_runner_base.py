"""The runner base (timeouts, cancel, streaming, outcome) on the fake transport of
`fake_runner`, and the same contract on the real local transport."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_runner import KILLED, FakeCommand, FakeRunner, Reply

from edgehub.errors import CommandCancelled, CommandError, CommandTimeout, RunnerError
from edgehub.events import EventSink, LogEvent, use_sink
from edgehub.runners.base import cancel_all, open_runners
from edgehub.runners.local import LocalCommandRunner
from edgehub.runners.protocol import CommandRunner, SupportsExchange


def _events() -> tuple[EventSink, list[LogEvent]]:
    sink, seen = EventSink(), []
    sink.subscribe(seen.append)
    return sink, seen


def _slow_once_started(started: threading.Event) -> FakeRunner:
    """A runner whose commands take 30 s and set ``started`` as they start: a test stops them
    once they run (a timer could fire before the command starts on a busy machine)."""

    def handler(command: FakeCommand) -> Reply:
        started.set()
        return Reply([30.0])

    return FakeRunner(handler)


def _once(event: threading.Event, action: Callable[[], object]) -> None:
    """Do ``action`` on another thread as soon as ``event`` is set (60 s at most)."""
    threading.Thread(target=lambda: event.wait(60) and action(), daemon=True).start()


def test_fake_runner_satisfies_the_protocol_without_exchange() -> None:
    runner = FakeRunner()
    assert isinstance(runner, CommandRunner)
    assert not isinstance(runner, SupportsExchange)


def test_lines_stream_in_order_across_streams_and_chunks() -> None:
    steps = [("stdout", "one\ntw"), ("stderr", "warn"), ("stdout", "o\n"), ("stderr", "ing\n"),
             ("stdout", "thr\xc3".encode("latin-1")), ("stdout", b"\xa9e")]  # fmt: skip
    runner = FakeRunner(lambda command: Reply(steps))
    sink, seen = _events()
    with use_sink(sink):
        result = runner.run(["tool"])
    assert [(e.kind, e.message) for e in seen] == [
        ("stdout", "one"), ("stdout", "two"), ("stderr", "warning"), ("stdout", "thrée")
    ]  # fmt: skip
    assert (result.stdout, result.stderr, result.returncode) == (
        "one\ntwo\nthrée\n",
        "warning\n",
        0,
    )


def test_lines_arrive_while_the_command_runs() -> None:
    runner = FakeRunner(lambda command: Reply([("stdout", "early\n"), 30.0, ("stdout", "late\n")]))
    sink, seen = _events()
    early = threading.Event()
    sink.subscribe(lambda event: early.set() if event.message == "early" else None)
    _once(early, runner.cancel)  # only a line that arrives before the command ends stops it
    with use_sink(sink), pytest.raises(CommandCancelled):
        runner.run(["tool"])
    assert [e.message for e in seen] == ["early"]


def test_hide_keeps_lines_off_the_sink_but_in_the_result() -> None:
    runner = FakeRunner(lambda command: Reply.of(stdout="secret\n"))
    sink, seen = _events()
    with use_sink(sink):
        result = runner.run(["tool"], hide=True)
    assert seen == [] and result.stdout == "secret\n"


def test_exit_codes_become_command_errors_unless_unchecked() -> None:
    runner = FakeRunner(lambda command: Reply.of(stderr="first\nlast words\n", returncode=5))
    with pytest.raises(CommandError) as raised:
        runner.run(["tool", "--flag"])
    assert raised.value.returncode == 5
    assert str(raised.value) == "command 'tool' exited with code 5: last words"
    result = runner.run(["tool"], check=False)
    assert (result.returncode, result.ok) == (5, False)


def test_a_command_killed_by_sigkill_is_named_killed() -> None:
    runner = FakeRunner(lambda command: Reply.of(stderr="Killed\n", returncode=137))
    with pytest.raises(CommandError) as raised:
        runner.run(["tool"])
    assert str(raised.value) == (
        "command 'tool' was killed (exit 137): out of memory on the device or SIGKILL — check "
        "free memory; last output: Killed"
    )


def test_timeout_kills_the_process() -> None:
    runner = FakeRunner(lambda command: Reply([("stdout", "started\n"), 30.0]))
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"longer than 0\.3 s"):
        runner.run(["slow"], timeout=0.3)
    assert time.monotonic() - started < 15  # far below the command's 30 s
    assert runner.killed == 1


def test_cancel_from_another_thread() -> None:
    running = threading.Event()

    def handler(command: FakeCommand) -> Reply:
        if command.argv[0] != "slow":
            return Reply()
        running.set()
        return Reply([30.0])

    runner = FakeRunner(handler)
    _once(running, runner.cancel)
    started = time.monotonic()
    with pytest.raises(CommandCancelled, match="'slow' was cancelled"):
        runner.run(["slow"])
    assert time.monotonic() - started < 15  # far below the command's 30 s
    assert runner.killed == 1
    assert runner.run(["fast"]).ok  # still usable


def test_an_interrupt_while_waiting_kills_the_process() -> None:
    running = threading.Event()
    runner = _slow_once_started(running)
    _once(running, lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C
    with pytest.raises(KeyboardInterrupt):
        runner.run(["slow"])
    assert runner.killed == 1


def test_cancel_all_stops_every_open_runner() -> None:
    running = [threading.Event() for _ in range(2)]
    runners = [_slow_once_started(event) for event in running]
    errors: list[BaseException] = []

    def run(runner: FakeRunner) -> None:
        try:
            runner.run(["slow"])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(runner,)) for runner in runners]
    for thread in threads:
        thread.start()
    assert all(event.wait(60) for event in running), "the commands never started"
    assert all(runner in open_runners() for runner in runners)
    cancel_all()
    for thread in threads:
        thread.join(30)
    assert [type(error) for error in errors] == [CommandCancelled, CommandCancelled]
    assert not any(runner in open_runners() for runner in runners)


def test_handler_sees_argv_cwd_env_and_files(tmp_path: Path) -> None:
    def handler(command: FakeCommand) -> Reply:
        command.files[f"{command.cwd}/out.txt"] = command.files[f"{command.cwd}/in.txt"].upper()
        return Reply.of(stdout=command.env["GREETING"])

    runner = FakeRunner(handler)
    (tmp_path / "in.txt").write_text("hello")
    runner.put(tmp_path / "in.txt", "/job/in.txt")
    result = runner.run(["tool", "a b"], cwd="/job", env={"GREETING": "hi"})
    runner.get("/job/out.txt", tmp_path / "back.txt")
    assert result.stdout == "hi\n" and (tmp_path / "back.txt").read_text() == "HELLO"
    assert runner.commands[0].argv == ("tool", "a b")
    assert runner.puts == [(tmp_path / "in.txt", "/job/in.txt")]
    with pytest.raises(RunnerError, match="no such file"):
        runner.get("/job/missing", tmp_path / "x")


def test_killed_status_is_reported_with_check_false() -> None:
    running = threading.Event()
    runner = _slow_once_started(running)
    _once(running, runner.cancel)
    with pytest.raises(CommandCancelled):
        runner.run(["slow"], check=False)  # a cancel is an error even unchecked
    assert KILLED < 0


# -- the same contract on the real local transport --------------------------------------------


def test_local_streams_both_pipes_in_order_of_arrival(tmp_path: Path) -> None:
    runner = LocalCommandRunner()
    sink, seen = _events()
    # each line is written once the one before it has arrived (or after 60 s): their order of
    # arrival is the order they were written, however late a busy machine reads the pipes
    sink.subscribe(lambda event: (tmp_path / event.message).touch())
    wait = "i=0; while [ ! -e {} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"
    script = f"cd {tmp_path}; echo one; {wait.format('one')}; echo two >&2; {wait.format('two')}"
    with use_sink(sink):
        result = runner.run(["sh", "-c", f"{script}; echo three"])
    assert [(e.kind, e.message) for e in seen] == [
        ("stdout", "one"), ("stderr", "two"), ("stdout", "three")
    ]  # fmt: skip
    assert result.stderr == "two\n"


def test_local_timeout_and_cancel_kill_the_process_group(tmp_path: Path) -> None:
    runner = LocalCommandRunner()
    marker = tmp_path / "survived"
    with pytest.raises(CommandTimeout):
        runner.run(["sh", "-c", f"(sleep 1; touch {marker}) & sleep 30"], timeout=0.3)
    sink, running = EventSink(), threading.Event()
    sink.subscribe(lambda event: running.set())
    _once(running, runner.cancel)
    with use_sink(sink), pytest.raises(CommandCancelled):
        runner.run(["sh", "-c", "echo started; exec sleep 30"])
    time.sleep(1.2)
    assert not marker.exists(), "the background child outlived the kill"


def test_local_missing_command_is_a_runner_error() -> None:
    with pytest.raises(RunnerError, match="not found on this host"):
        LocalCommandRunner().run(["no-such-tool-xyz"])
