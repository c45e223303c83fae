"""`doctor`: is this machine ready to run the project? One `Check` per thing looked at."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import EdgehubError

if TYPE_CHECKING:
    from edgehub.ops.project import Project
    from edgehub.runners.docker.client import DockerClient
    from edgehub.tracking.verify import ArtifactProblem, ArtifactReport


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


def doctor(
    config_path: str | Path | None = None, *, repair: bool = False, item_limit: int | None = None
) -> list[Check]:
    """Check hub.toml, the run store (its database, whether it can be written, its artifacts:
    ``repair`` fixes what it can, one row per problem, at most ``item_limit``), the resident
    host processes (those that died leave no socket behind), the Docker daemon, leftovers of
    dead `hub` processes (removed here), warm containers and each runtime's image; then each
    other Docker daemon a device names (``[devices.X.docker] host``): reachable or not, one
    row each, and our warm containers there."""
    from edgehub.ops.project import open_project

    checks: list[Check] = []
    daemons: list[Check] = []
    try:
        project = open_project(config_path)
    except EdgehubError as error:
        checks.append(Check("hub.toml", "FAIL", str(error)))
    else:
        checks.append(Check("hub.toml", "ok", str(project.config.path or "none (defaults)")))
        checks.extend(_store_checks(project, repair, item_limit))
        # first: the SDK, once imported for a local daemon, can no longer reach an ssh:// one
        daemons = _device_daemon_checks(project)
    checks.extend(_resident_checks())
    checks.extend(_docker_checks())
    return checks + daemons


def _resident_checks() -> list[Check]:
    """One row per resident host process of this user's cache (``EDGEHUB_RESIDENT=on``) that
    serves; the socket and pid file of one that died (killed outright) are removed."""
    from edgehub.paths import existing_cache_subdir

    try:
        folder = existing_cache_subdir("resident")
    except EdgehubError as error:
        return [Check("resident", "FAIL", str(error))]
    if folder is None:
        return []
    checks, removed = [], 0
    for pid_file in sorted(folder.glob("*.pid")):
        try:
            pid = int(pid_file.read_text().strip())
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            serving = os.stat(f"/proc/{pid}").st_uid == os.getuid()
        except (OSError, ValueError):
            command, serving = b"", False
        if serving and b"edgehub.cli.resident" in command:
            detail = f"process {pid} serves hub exec (log: {folder / 'server.log'})"
            checks.append(Check("resident", "ok", detail))
            continue
        pid_file.with_suffix(".sock").unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)
        removed += 1
    if removed:
        detail = f"removed the socket of {removed} resident process(es) that ended without it"
        checks.append(Check("resident", "warn", detail))
    return checks


def _store_checks(project: Project, repair: bool, item_limit: int | None) -> list[Check]:
    from edgehub.tracking.verify import verify_artifacts

    try:
        store = project.store()
    except EdgehubError as error:
        return [Check("run store", "FAIL", str(error))]
    try:
        damage = store.damage()
        if damage is not None:
            return [Check("run store", "FAIL", damage)]
        read_only = store.read_only_problem
        report = verify_artifacts(store, repair=repair and read_only is None)
    except EdgehubError as error:
        return [Check("run store", "FAIL", str(error))]
    finally:
        store.close()
    where = str(project.store_dir)
    items = [_problem_check(p) for p in report.problems]
    items += [Check("artifact copy", "ok", f"{s.path.name}: {s.reason}; left alone")
              for s in report.left_alone]  # fmt: skip
    if item_limit is not None and len(items) > item_limit:
        more = f"and {len(items) - item_limit} more (hub doctor --json lists them all)"
        items = [*items[:item_limit], Check("artifact", "warn", more)]
    if read_only is not None:
        detail = (
            f"read-only: {read_only.what}; runs cannot be recorded here: {read_only.advice}"
            f" ({report.checked} artifacts checked, {len(report.problems)} problem(s)"
            f"{', nothing repaired' if repair else ''})"
        )
        return [Check("run store", "FAIL", detail), *items]
    return [_summary(report, where, repair), *items]


_WHAT = {
    "mismatch": ("edited in place", "edited, moved to quarantine"),
    "linked": ("hard-linked outside the store", "hard-linked, given copies of their own"),
    "stale": ("unfinished copies of ended processes", "unfinished copies removed"),
    "link": ("symbolic links", "symbolic links removed (not followed)"),
    "missing": ("missing", ""),
    "stray": ("not made by the store", ""),
}


def _problem_check(problem: ArtifactProblem) -> Check:
    if problem.kind == "missing":
        return Check("artifact missing", "warn", f"{problem.detail} ({problem.path})")
    used = f" (used by {', '.join(problem.runs)})" if problem.runs else ""
    if problem.repaired:
        return Check(f"artifact {problem.kind}", "ok", f"{problem.path}{used}: {problem.repaired}")
    state = "FAIL" if problem.repairable else "warn"
    return Check(f"artifact {problem.kind}", state, f"{problem.path}{used}: {problem.detail}")


def _count(problems: list[ArtifactProblem], label: int) -> str:
    counts = Counter(problem.kind for problem in problems)
    return ", ".join(f"{_WHAT[kind][label]}: {n}" for kind, n in sorted(counts.items()))


def _summary(report: ArtifactReport, where: str, repair: bool) -> Check:
    busy = (
        f"; {len(report.left_alone)} copy(ies) in progress left alone" if report.left_alone else ""
    )
    if report.ok:
        return Check("run store", "ok", f"{report.checked} artifacts verified in {where}{busy}")
    fixable = [p for p in report.problems if p.repairable]
    missing = [p for p in report.problems if p.kind == "missing"]
    rest = [p for p in report.problems if not p.repairable and p.kind != "missing"]
    notes = []
    if missing:
        notes.append(f"{len(missing)} missing artifact(s) cannot be brought back: rerun the "
                     "runs named below to make them again")  # fmt: skip
    if rest:
        notes.append(f"{len(rest)} file(s) not made by the store: see below")
    if repair:
        done = [p for p in fixable if p.repaired]
        head = f"repaired {len(done)}" + (f" ({_count(done, 1)})" if done else "")
        detail = "; ".join([f"{head} in {where}", *notes]) + busy
        return Check("run store", "warn" if notes else "ok", detail)
    head = f"{len(report.problems)} problem(s) in {where}: {_count(report.problems, 0)}"
    if fixable:
        but = " (it fixes all but those)" if len(fixable) < len(report.problems) else ""
        notes.insert(0, f"run: hub doctor --repair{but}")
    return Check("run store", "FAIL" if fixable else "warn", "; ".join([head, *notes]) + busy)


def _leftover_checks(client: DockerClient) -> list[Check]:
    from edgehub.ops.cleanup import reap_leftovers, warm_containers

    report = reap_leftovers(client=client)
    if report:
        detail = (
            f"removed {len(report.containers_removed)} container(s) and stopped "
            f"{report.jobs_stopped} job(s) of dead hub processes"
        )
        checks = [Check("leftovers", "warn", detail)]
    else:
        checks = [Check("leftovers", "ok", "no containers or jobs of dead hub processes")]
    for warm in warm_containers(client):
        checks.append(Check(f"warm {warm.name}", "ok", f"{warm.image}: {warm.status}"))
    return checks


def _docker_checks() -> list[Check]:
    from edgehub import images

    checks: list[Check] = []
    try:
        client = images.docker_client()
    except EdgehubError as error:
        return [Check("docker daemon", "FAIL", str(error))]
    try:
        checks.append(Check("docker daemon", "ok", f"reachable at {_daemon_address()}"))
        checks.extend(_leftover_checks(client))
        statuses = [images.image_status(r, client=client) for r in images.available_runtimes()]
    finally:
        client.close()
    from edgehub.core.runtimes import all_runtimes

    # a runtime that checks its own images (with the GPU they need) replaces their plain line
    own = [
        Check(c.name, c.state, c.detail)
        for runtime in all_runtimes().values()
        if runtime.image_checks is not None
        for c in runtime.image_checks()
    ]
    named = {check.name for check in own}
    for status in statuses:
        if f"image {status.runtime}" in named:
            continue
        if status.built:
            checks.append(Check(f"image {status.runtime}", "ok", status.tag))
        else:
            hint = f"run: hub images build {status.runtime}"
            checks.append(Check(f"image {status.runtime}", "missing", hint))
    checks.extend(own)
    return checks


def device_daemons(project: Project) -> dict[str, list[str]]:
    """The Docker daemons that devices name (``[devices.X.docker] host``, or an override's)
    other than ``$DOCKER_HOST``'s, each with the devices that use it."""
    from edgehub.core.device.configs import DockerConfig

    found: dict[str, list[str]] = {}
    for name, section in project.config.devices.items():
        for settings in [section.settings, *section.overrides.values()]:
            host = settings.values.get("host") if settings is not None else None
            if settings is None or settings.config_type is not DockerConfig or not host:
                continue
            if host != os.environ.get("DOCKER_HOST") and name not in found.get(host, []):
                found.setdefault(str(host), []).append(name)
    return found


def _device_daemon_checks(project: Project) -> list[Check]:
    """A row per daemon of `device_daemons` (an unreachable one: FAIL, its one-line error),
    then a row per warm container of ours on it."""
    from edgehub.ops.cleanup import warm_containers
    from edgehub.runners.docker import connect

    checks: list[Check] = []
    # ssh:// first: once the SDK is imported for another daemon it cannot reach an ssh:// one
    # (`edgehub.runners.docker.sdk` defers paramiko's import for a process's first daemon)
    daemons = sorted(device_daemons(project).items(), key=lambda d: not d[0].startswith("ssh:"))
    for host, names in daemons:
        label = f"docker daemon of {', '.join(names)}"
        try:
            client = connect(timeout=10, host=host)
        except EdgehubError as error:
            checks.append(Check(label, "FAIL", str(error)))
            continue
        try:
            warm = warm_containers(client)
        finally:
            client.close()
        checks.append(Check(label, "ok", f"reachable at {host}; {len(warm)} warm container(s)"))
        checks += [Check(f"warm {w.name} at {host}", "ok", f"{w.image}: {w.status}") for w in warm]
    return checks


def _daemon_address() -> str:
    from edgehub.runners.docker.client import docker_host

    host = docker_host()  # checked by the connection this follows
    if host:
        return host
    context = os.environ.get("DOCKER_CONTEXT")
    return f"Docker context {context}" if context else "the default socket"
