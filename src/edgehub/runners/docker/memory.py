"""Whether a container's memory limit killed a process: an ``exec``'d command killed by the
kernel's OOM killer leaves the container running (Docker's ``State.OOMKilled`` stays false),
so the container's own memory cgroup is asked for its OOM-kill count (``oom_kill`` in
``memory.events`` on cgroup v2, in ``memory.oom_control`` on v1); a container whose main
process was killed is reported by Docker's state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import RunnerError

if TYPE_CHECKING:
    from edgehub.runners.docker.runner import DockerCommandRunner


_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
_CONTAINER_KILLED = 1 << 30  # Docker says the container itself was OOM-killed


def oom_kills(runner: DockerCommandRunner) -> int:
    """How many processes the container's memory limit has killed so far (0 if unknown)."""
    client, container = runner.client, runner.container_id
    if client is None or container is None:
        return 0
    try:
        state = client.inspect_container(container).get("State") or {}
    except Exception:  # gone already: nothing more to learn
        return 0
    if state.get("OOMKilled"):
        return _CONTAINER_KILLED
    if not state.get("Running"):
        return 0
    try:
        result = runner.run(["cat", *_COUNTERS], hide=True, check=False, timeout=10)
    except RunnerError:
        return 0
    for line in result.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0
