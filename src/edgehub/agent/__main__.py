"""``python -m edgehub.agent COMMAND ...`` (the zipapp has its own top-level __main__.py)."""

from __future__ import annotations

from .entry import exit_now, main

if __name__ == "__main__":
    exit_now(main())
