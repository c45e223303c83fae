"""`doctor`: is this machine ready to run the project? One `Check` per thing looked at."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import EdgehubError

if TYPE_CHECKING:
    from edgehub.ops.project import Project

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


def doctor(config_path: str | Path | None = None, *, repair: bool = False) -> list[Check]:
    """Check hub.toml, the run store's artifacts (``repair`` fixes what it can), the Docker
    daemon, leftovers of dead `hub` processes (removed here), warm containers and each
    runtime's image."""
    from edgehub.ops.project import open_project

    checks: list[Check] = []
    try:
        project = open_project(config_path)
        checks.append(Check("hub.toml", "ok", str(project.config.path or "none (defaults)")))
        checks.append(_store_check(project, repair))
    except EdgehubError as error:
        checks.append(Check("hub.toml", "FAIL", str(error)))
    checks.extend(_docker_checks())
    return checks


def _store_check(project: Project, repair: bool) -> Check:
    from edgehub.tracking.verify import verify_artifacts

    try:
        store = project.store()
    except EdgehubError as error:
        return Check("run store", "FAIL", str(error))
    try:
        report = verify_artifacts(store, repair=repair)
    finally:
        store.close()
    where = str(project.store_dir)
    if report.ok:
        return Check("run store", "ok", f"{report.checked} artifacts verified in {where}")
    kinds = sorted({p.kind for p in report.problems})
    repaired = sum(1 for p in report.problems if p.repaired)
    detail = f"{len(report.problems)} problem(s) ({', '.join(kinds)}) in {where}"
    if repair:
        return Check("run store", "warn", f"{detail}; repaired {repaired}")
    return Check("run store", "FAIL", f"{detail}; run: hub doctor --repair")


def _leftover_checks() -> list[Check]:
    from edgehub.ops.cleanup import reap_leftovers, warm_containers

    report = reap_leftovers()
    if report:
        detail = (
            f"removed {len(report.containers_removed)} container(s) and stopped "
            f"{report.jobs_stopped} job(s) of dead hub processes"
        )
        checks = [Check("leftovers", "warn", detail)]
    else:
        checks = [Check("leftovers", "ok", "no containers or jobs of dead hub processes")]
    for warm in warm_containers():
        checks.append(Check(f"warm {warm.name}", "ok", f"{warm.image}: {warm.status}"))
    return checks


def _docker_checks() -> list[Check]:
    from edgehub import images

    checks: list[Check] = []
    try:
        images.docker_client().close()
    except EdgehubError as error:
        return [Check("docker daemon", "FAIL", str(error))]
    checks.append(Check("docker daemon", "ok", "reachable"))
    checks.extend(_leftover_checks())
    for status in images.list_images():
        if status.runtime.startswith("tensorrt"):
            continue  # with the GPU, below
        if status.built:
            checks.append(Check(f"image {status.runtime}", "ok", status.tag))
        else:
            hint = f"run: hub images build {status.runtime}"
            checks.append(Check(f"image {status.runtime}", "missing", hint))
    from edgehub.toolchains.tensorrt.gpu import tensorrt_image_checks

    checks.extend(Check(c.name, c.state, c.detail) for c in tensorrt_image_checks())
    return checks
