"""Command-line entry: ``edgehub-agent [--server SOCKET] COMMAND [--request R] [--result O]``.

Progress goes to stderr, one flushed line at a time; stdout stays quiet while a command runs
(libraries' output goes to stderr too). Without ``--result`` the result JSON is printed on
stdout at the end (format and exit codes: :mod:`.protocol`). ``--server PATH`` calls go to
:mod:`.server.client` (:mod:`.entry` sends them there without loading this module);
``serve`` is the server (:mod:`.server.serve`); commands are found by name (:mod:`.commands`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from types import FrameType
from typing import Any, TextIO

from . import AGENT_VERSION, PROTOCOL_VERSION
from .argv import ArgvProblem, option_value, read_options
from .commands import BUILTIN_COMMANDS, command_names, load_handler, namespace_of
from .entry import flush_output
from .env import collect_env
from .protocol import (
    EXIT_OK,
    AgentError,
    Cancelled,
    CommandOutput,
    Params,
    RuntimeFailure,
    UsageError,
    error_payload,
    json_safe,
    write_json_atomic,
)
from .report import Report, install_log_capture

USAGE_LINES = (
    "usage: edgehub-agent [--server PATH] COMMAND [--request REQUEST.json] [--result RESULT.json]",
    "       edgehub-agent serve --socket PATH [--idle SECONDS] [--preload NAMESPACE]",
    "commands: {commands}",
    "progress goes to stderr; the result (JSON) to --result, or to stdout without it;",
    "exit codes: 0 ok, 2 user error, 1 unexpected error, 130 cancelled",
    "--server PATH: run on the agent server listening on the Unix socket PATH; without one,",
    "run here and start one (preloading the command's runtime) in the background for next time",
)
USAGE = USAGE_LINES[0]
SERVE_COMMAND = "serve"


def usage() -> str:
    return "\n".join(USAGE_LINES).format(commands=", ".join(command_names()))


def parse_args(argv: list[str]) -> tuple[str | None, str | None, str | None]:
    """(command, request path, result path); raises UsageError on anything else."""
    # a valid --server PATH is taken out before this (entry.py); one left here has no value
    try:
        words, values = read_options(argv, ("--request", "--result", "--server"), value="a path")
    except ArgvProblem as problem:
        raise UsageError(f"{problem}. {USAGE}") from None
    if len(words) > 1:
        raise UsageError(f"unexpected argument {words[1]!r}. {USAGE}")
    return (words[0] if words else None), values.get("--request"), values.get("--result")


def read_request(path: str | None, command: str) -> dict[str, Any]:
    if path is None:
        if command == "env":
            return {}
        raise UsageError(f"{command} needs --request REQUEST.json")
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except OSError as exc:
        raise UsageError(f"request file '{path}' cannot be read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise UsageError(f"request file '{path}' is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise UsageError(f"request file '{path}' must hold a JSON object of parameters")
    return raw


def run_env(params: Params, report: Report) -> CommandOutput:
    params.finish()
    return CommandOutput(params=params.resolved)


class QuietStdout:
    """Send everything written to stdout (Python and C level) to stderr while a command runs."""

    def __init__(self) -> None:
        self.saved_fd: int | None = None
        self.saved_stdout: TextIO | None = None

    def __enter__(self) -> QuietStdout:
        self.saved_stdout = sys.stdout
        try:
            sys.stdout.flush()
            self.saved_fd = os.dup(1)
            os.dup2(2, 1)
        except (OSError, ValueError, AttributeError):
            self.saved_fd = None
        sys.stdout = sys.stderr
        return self

    def __exit__(self, *exc: object) -> None:
        flush_output()
        if self.saved_fd is not None:
            os.dup2(self.saved_fd, 1)
            os.close(self.saved_fd)
        if self.saved_stdout is not None:
            sys.stdout = self.saved_stdout


def _raise_cancelled(signum: int, frame: FrameType | None) -> None:
    raise Cancelled(f"stopped by signal {signum}")


def _safe_env(command: str | None) -> dict[str, Any]:
    namespace = namespace_of(command)
    try:
        return collect_env(None if namespace is None else [namespace])
    except Exception as exc:
        return {"error": str(exc)}


def execute(argv: list[str], report: Report) -> tuple[dict[str, Any], int]:
    """Run one command; returns the result payload and the exit code."""
    started = time.monotonic()
    command: str | None = None
    payload: dict[str, Any]
    try:
        command, request_path, _ = parse_args(argv)
        handler = run_env if command in BUILTIN_COMMANDS else load_handler(command)
        assert command is not None
        params = Params(read_request(request_path, command), command)
        output = handler(params, report)
        payload = {
            "ok": True,
            "command": command,
            "params": output.params,
            "metrics": output.metrics,
            "data": output.data,
        }
        code = EXIT_OK
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        error = error_payload(exc, command)
        if isinstance(exc, RuntimeFailure) and report.guessed_shapes:
            error["message"] += f"; {report.guessed_shapes}"
        payload = {"ok": False, "command": command, "error": error}
        if error["kind"] != "Cancelled" and error["exit_code"] == 1:
            import traceback

            payload["detail"] = traceback.format_exc()
            if not isinstance(exc, AgentError):  # printed only for what nobody anticipated
                payload["show_detail"] = True
                error["message"] += "; the traceback is in the result's 'detail'"
        code = int(error["exit_code"])
    payload.update(
        {
            "warnings": list(report.warnings),
            "env": _safe_env(command),
            "agent_version": AGENT_VERSION,
            "protocol": PROTOCOL_VERSION,
            "elapsed_s": round(time.monotonic() - started, 3),
        }
    )
    return payload, code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(usage())
        return EXIT_OK
    if "--version" in args:
        print(f"edgehub-agent {AGENT_VERSION} (protocol {PROTOCOL_VERSION})")
        return EXIT_OK
    if args[:1] == [SERVE_COMMAND]:
        from .server.serve import serve_main

        return serve_main(args[1:], main)
    reconfigure = getattr(sys.stderr, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(line_buffering=True)
        except (OSError, ValueError):
            pass
    report = Report(sys.stderr)
    result_path = option_value(args, "--result")  # to report a bad line there too
    try:
        previous = signal.signal(signal.SIGTERM, _raise_cancelled)
    except (ValueError, OSError):  # not the main thread
        previous = None
    uninstall_log_capture = install_log_capture(report)
    try:
        with QuietStdout():
            payload, code = execute(args, report)
    finally:
        uninstall_log_capture()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    try:
        if result_path:
            write_json_atomic(result_path, payload)
        else:
            sys.stdout.write(json.dumps(json_safe(payload), indent=1, allow_nan=False) + "\n")
            sys.stdout.flush()
    except (OSError, ValueError) as exc:
        report.info(f"error: cannot write the result to '{result_path}': {exc}")
        return 1
    if not payload["ok"]:
        if payload.get("show_detail"):
            report.info(str(payload["detail"]).rstrip())
        report.info(f"error: {payload['error']['message']}")
    return code
