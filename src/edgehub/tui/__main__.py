"""``python -m edgehub.tui``: the same as ``hub-tui`` (textual-serve starts it this way)."""

from edgehub.tui.app import run

raise SystemExit(run())
