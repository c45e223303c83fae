"""What the `hub exec ab` tests share: the real `hub` entry point run as a subprocess (without
``EDGEHUB_KEEP_WARM``, so each test's containers go when it ends), `hub runs show` read back,
and the documented regression exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HUB = str(Path(sys.executable).with_name("hub"))
EXIT_REGRESSION = 5


def hub(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EDGEHUB_KEEP_WARM"}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def show(cwd: Path, run_id: str) -> dict[str, Any]:
    result = hub("runs", "show", run_id, "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    record: dict[str, Any] = json.loads(result.stdout)
    return record
