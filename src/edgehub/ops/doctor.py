"""`doctor`: is this machine ready to run the project? One `Check` per thing looked at."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgehub.errors import EdgehubError

__all__ = ["Check", "doctor"]


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # "ok", "warn", "FAIL", "missing"
    detail: str

    @property
    def ok(self) -> bool:
        return self.state in ("ok", "warn")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def doctor(config_path: str | Path | None = None) -> list[Check]:
    """Check hub.toml, the Docker daemon and each runtime's image."""
    from edgehub.ops.project import open_project

    checks: list[Check] = []
    try:
        config = open_project(config_path).config
        checks.append(Check("hub.toml", "ok", str(config.path or "none (defaults)")))
    except EdgehubError as error:
        checks.append(Check("hub.toml", "FAIL", str(error)))
    checks.extend(_docker_checks())
    return checks


def _docker_checks() -> list[Check]:
    from edgehub import images

    checks: list[Check] = []
    try:
        images.docker_client().close()
    except EdgehubError as error:
        return [Check("docker daemon", "FAIL", str(error))]
    checks.append(Check("docker daemon", "ok", "reachable"))
    for status in images.list_images():
        if status.built:
            checks.append(Check(f"image {status.runtime}", "ok", status.tag))
        else:
            hint = f"run: hub images build {status.runtime}"
            checks.append(Check(f"image {status.runtime}", "missing", hint))
    return checks
