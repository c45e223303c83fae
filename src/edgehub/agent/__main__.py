"""``python -m edgehub.agent COMMAND ...`` (the zipapp has its own top-level __main__.py)."""

from __future__ import annotations

import sys

from .entry import main

if __name__ == "__main__":
    sys.exit(main())
