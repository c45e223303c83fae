"""Command-line entry: ``edgehub-agent [--server SOCKET] COMMAND [--request R] [--result O]``.

Progress goes to stderr (one flushed line at a time); stdout stays quiet while a command runs
(even output written by libraries goes to stderr). Without ``--result`` the result JSON is printed
on stdout at the end. See :mod:`.protocol` for the result format and exit codes.

``--server PATH`` (anywhere on the line) runs the command on a warm agent server listening on the
Unix socket PATH, or here when none answers, then starts one for next time; :mod:`.entry` sends
such calls to :mod:`.server_client` without loading this module. ``edgehub-agent serve --socket
PATH [--idle SECONDS]`` is that server (:mod:`.server`).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import sys
import time
import traceback
from types import FrameType
from typing import Any, Callable, TextIO

from . import AGENT_VERSION, PROTOCOL_VERSION
from .env import collect_env
from .protocol import (
    EXIT_OK,
    Cancelled,
    CommandOutput,
    Params,
    UsageError,
    error_payload,
    json_safe,
    write_json_atomic,
)
from .report import Report, install_log_capture

# command -> module (imported only when the command runs, so `env` stays light)
COMMANDS: dict[str, str | None] = {
    "env": None,
    "ort.inspect": "ort_inspect",
    "ort.compile": "ort_compile",
    "ort.profile": "ort_profile",
    "ort.invoke": "ort_invoke",
    "tflite.inspect": "tflite.inspect",
    "tflite.compile": "tflite.compile",
    "tflite.profile": "tflite.profile",
    "tflite.invoke": "tflite.invoke",
}

USAGE = (
    "usage: edgehub-agent [--server PATH] COMMAND [--request REQUEST.json] [--result RESULT.json]\n"
    "       edgehub-agent serve --socket PATH [--idle SECONDS]\n"
    f"commands: {', '.join(COMMANDS)}\n"
    "progress goes to stderr; the result (JSON) to --result, or to stdout without it;\n"
    "exit codes: 0 ok, 2 user error, 1 unexpected error, 130 cancelled\n"
    "--server PATH: run on the agent server listening on the Unix socket PATH; without one,\n"
    "run here and start one in the background for next time"
)
SERVE_COMMAND = "serve"

Handler = Callable[[Params, Report], CommandOutput]


def parse_args(argv: list[str]) -> tuple[str | None, str | None, str | None]:
    """(command, request path, result path); raises UsageError on anything else."""
    command: str | None = None
    # a valid --server PATH is taken out before this (entry.py); one left here has no value
    values: dict[str, str | None] = {"--request": None, "--result": None, "--server": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if name in values:
            if eq:
                values[name] = inline
                i += 1
            elif i + 1 < len(argv):
                values[name] = argv[i + 1]
                i += 2
            else:
                raise UsageError(f"{name} needs a path. {USAGE.splitlines()[0]}")
            continue
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg}. {USAGE.splitlines()[0]}")
        if command is not None:
            raise UsageError(f"unexpected argument {arg!r}. {USAGE.splitlines()[0]}")
        command = arg
        i += 1
    return command, values["--request"], values["--result"]


def handler_modules() -> list[str]:
    return [f"{__package__}.{name}" for name in COMMANDS.values() if name]


def prescan_result(argv: list[str]) -> str | None:
    """Find --result even when the rest of the command line is bad, to report the error there."""
    for i, arg in enumerate(argv):
        if arg == "--result" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--result="):
            return arg.split("=", 1)[1]
    return None


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


def load_handler(command: str | None) -> Handler:
    if command is None:
        raise UsageError(f"no command given; commands: {', '.join(COMMANDS)}")
    if command not in COMMANDS:
        raise UsageError(f"unknown command '{command}'; known: {', '.join(COMMANDS)}")
    module_name = COMMANDS[command]
    if module_name is None:
        return run_env
    module = importlib.import_module(f"{__package__}.{module_name}")
    handler: Handler = module.run
    return handler


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
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if self.saved_fd is not None:
            os.dup2(self.saved_fd, 1)
            os.close(self.saved_fd)
        if self.saved_stdout is not None:
            sys.stdout = self.saved_stdout


def _raise_cancelled(signum: int, frame: FrameType | None) -> None:
    raise Cancelled(f"stopped by signal {signum}")


def _safe_env() -> dict[str, Any]:
    try:
        return collect_env()
    except Exception as exc:
        return {"error": str(exc)}


def execute(argv: list[str], report: Report) -> tuple[dict[str, Any], int]:
    """Run one command; returns the result payload and the exit code."""
    started = time.monotonic()
    command: str | None = None
    payload: dict[str, Any]
    try:
        command, request_path, _ = parse_args(argv)
        handler = load_handler(command)
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
        payload = {"ok": False, "command": command, "error": error}
        if error["kind"] not in ("Cancelled",) and error["exit_code"] == 1:
            payload["detail"] = traceback.format_exc()
            error["message"] += "; the traceback is in the result's 'detail'"
        code = int(error["exit_code"])
    payload.update(
        {
            "warnings": list(report.warnings),
            "env": _safe_env(),
            "agent_version": AGENT_VERSION,
            "protocol": PROTOCOL_VERSION,
            "elapsed_s": round(time.monotonic() - started, 3),
        }
    )
    return payload, code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(USAGE)
        return EXIT_OK
    if "--version" in args:
        print(f"edgehub-agent {AGENT_VERSION} (protocol {PROTOCOL_VERSION})")
        return EXIT_OK
    if args[:1] == [SERVE_COMMAND]:
        from .server import serve_main

        return serve_main(args[1:], main, handler_modules())
    reconfigure = getattr(sys.stderr, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(line_buffering=True)
        except (OSError, ValueError):
            pass
    report = Report(sys.stderr)
    result_path = prescan_result(args)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _raise_cancelled)
    except (ValueError, OSError):  # not the main thread
        previous = None
    handler = install_log_capture(report)
    try:
        with QuietStdout():
            payload, code = execute(args, report)
    finally:
        logging.getLogger().removeHandler(handler)
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
        if "detail" in payload:
            report.info(str(payload["detail"]).rstrip())
        report.info(f"error: {payload['error']['message']}")
    return code
