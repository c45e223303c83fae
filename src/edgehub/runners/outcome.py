"""Turning a finished command into a `CommandResult`, or the error every runner raises."""

from __future__ import annotations

from collections.abc import Sequence

from edgehub.errors import CommandCancelled, CommandError, CommandTimeout
from edgehub.runners.protocol import CommandResult
from edgehub.runners.streaming import last_line

KILLED = (137, -9)  # SIGKILL, as a shell reports it and as Python does: the OOM killer's signal


def killed_note(returncode: int) -> str | None:
    """What an exit status of SIGKILL means, to follow "was" in a message; else None."""
    if returncode not in KILLED:
        return None
    return f"killed (exit {returncode}): out of memory on the device or SIGKILL — check free memory"


def describe_failure(argv: Sequence[str], result: CommandResult) -> str:
    """A one-line message for a failed command, with the last line it printed."""
    line = last_line(result.stderr, result.stdout)
    killed = killed_note(result.returncode)
    if killed:
        return f"command {argv[0]!r} was {killed}" + (f"; last output: {line}" if line else "")
    last = f": {line}" if line else ""
    return f"command {argv[0]!r} exited with code {result.returncode}{last}"


def raise_for_outcome(
    result: CommandResult,
    *,
    stopped: str | None,
    timeout: float | None,
    check: bool,
    where: str = "",
) -> CommandResult:
    """Raise for a timeout, a cancel (``stopped``) or, with ``check``, a non-zero exit.

    ``where`` (" on HOST") names the machine in the messages.
    """
    name = result.argv[0]
    if stopped == "timeout":
        raise CommandTimeout(f"command {name!r} ran longer than {timeout} s{where} and was stopped")
    if stopped == "cancel":
        raise CommandCancelled(f"command {name!r}{where} was cancelled")
    if check and result.returncode != 0:
        raise CommandError(
            describe_failure(result.argv, result),
            returncode=result.returncode,
            stdout=result.stdout,
            stderr=result.stderr,
        )
    return result
