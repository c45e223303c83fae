"""Where the agent starts (the zipapp's ``__main__`` and ``python -m edgehub.agent``).

A ``--server`` call goes straight to :mod:`.server.client`, which loads neither :mod:`.cli` nor
numpy nor the runtime unless it ends up running the command itself; ``relay`` goes to
:mod:`.server.relay`; everything else goes to :func:`.cli.main`. A command (not ``serve``)
first starts what :mod:`.lifeline`'s environment variables ask for. `exit_now` ends the process
once ``main`` has returned.
"""

from __future__ import annotations

import os
import sys

from .argv import take_option, wants_help


def wants_server(argv: list[str]) -> bool:
    """Whether ``argv`` names ``--server`` (with a path or not: a bare one is reported later)."""
    return not wants_help(argv) and take_option(argv, "--server")[1] != argv


def runs_a_command(argv: list[str]) -> bool:
    """Whether ``argv`` runs a command (not help, version or ``serve``)."""
    return not wants_help(argv) and take_option(argv, "--server")[1][:1] != ["serve"]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["relay"]:
        from .server.relay import relay_main

        return relay_main(args[1:])
    if runs_a_command(args):
        from .lifeline import start_from_env

        start_from_env()
    if wants_server(args):
        from .server.client import client_main

        return client_main(args)
    from .cli import main as cli_main

    return cli_main(args)


_KEPT: list[object] = []


def keep_until_exit(*objects: object) -> None:
    """Hold ``objects`` until the process ends: a runtime's big objects (a parsed TensorRT
    network frees its layers one by one) are left for the system to
    reclaim at once when `exit_now` ends the process. For the process of one job (a command
    line's, or the one a resident server forks for a job); elsewhere they live until its end."""
    _KEPT.extend(objects)


def exit_now(code: int) -> None:
    """End the process with ``code`` once its output is flushed, skipping the interpreter's
    tear-down: every file a command writes is closed (and its result renamed into place)
    before ``main`` returns, and the threads left are daemons. Unloading a runtime's
    libraries and freeing its objects one by one costs a cold job tens of milliseconds."""
    flush_output()
    os._exit(code & 0xFF)


def flush_output() -> None:
    """Flush stdout and stderr, ignoring any error (a closed or broken pipe: nothing more can be
    said there): what follows (an exit, a fork) must happen whatever they do."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
