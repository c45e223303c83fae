"""The `hub` command line: headless runs for scripts and CI. Imports no Textual.

`run` is the `hub` script: a `hub exec` served by the resident host process
(`edgehub.cli.resident`) starts no more than that client; every other command is
`edgehub.cli.main`'s."""

from __future__ import annotations

import contextlib
import os
import sys


def flush_std() -> None:
    """Flush stdout and stderr; a closed pipe there is no error (nothing more can be said)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def run() -> None:
    """The `hub` entry point."""
    if os.environ.get("EDGEHUB_RESIDENT"):
        from edgehub.cli.resident import through_resident

        served = through_resident(sys.argv[1:])
        if served is not None:
            flush_std()
            os._exit(served)
    from edgehub.cli.main import run as run_here

    run_here()
