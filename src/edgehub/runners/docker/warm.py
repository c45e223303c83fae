"""Warm containers: one per settings, shared by processes, gone after ``keep_warm`` idle seconds.

The container's main process exits (and auto-remove deletes the container) once it has been
idle that long: no job running, and none started or ended. Every job runs under a wrapper
that registers its pid in ``/tmp/.edgehub-busy`` while it runs and touches a file when it
starts and ends, so a job longer than ``keep_warm`` keeps the container alive, and a job that
was killed (its pid gone) no longer does.
"""

from __future__ import annotations

import hashlib
import os
import time

from edgehub.errors import RunnerError
from edgehub.runners.docker.client import DockerAPIError, DockerNotFound
from edgehub.runners.docker.container import Container
from edgehub.runners.docker.owner import MANAGED, WARM, WARM_KEY

__all__ = ["JOB_WRAPPER", "start_warm", "warm_key"]

_ALIVE = "/tmp/.edgehub-alive"
_BUSY = "/tmp/.edgehub-busy"
# The main process: exit once no job has run, started or ended for $0 seconds.
_IDLE_LOOP = f"""
touch {_ALIVE}
while :; do
    for f in {_BUSY}/*; do
        [ -e "$f" ] || continue
        if [ -d "/proc/${{f##*/}}" ]; then touch {_ALIVE}; else rm -f "$f"; fi
    done
    [ $(( $(date +%s) - $(stat -c %Y {_ALIVE}) )) -lt "$0" ] || exit 0
    sleep 1
done
"""
# Runs a job ("$@") in a warm container, marking the container busy while it runs. Its $0 is
# the owner (host:pid:ticks), which the daemon shows in the exec's arguments, so the reaper
# finds a dead owner's jobs without entering the container.
JOB_WRAPPER = (
    f"mkdir -p {_BUSY} 2>/dev/null; touch {_BUSY}/$$ {_ALIVE} 2>/dev/null; "
    f'"$@"; rc=$?; rm -f {_BUSY}/$$; touch {_ALIVE} 2>/dev/null; exit $rc'
)


def warm_key(container: Container) -> str:
    """What the warm container of these settings (and this user, this image build) is named by."""
    settings = container.settings
    parts = [
        container.image_attrs.get("Id"),
        settings.cpus,
        settings.memory,
        settings.pids,
        settings.network,
        settings.user,
        settings.workdir,
        sorted(settings.labels.items()),
        os.getuid(),
    ]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def start_warm(container: Container, keep_warm: float) -> str:
    """Adopt the running warm container of ``container``'s settings, or start one that removes
    itself after ``keep_warm`` idle seconds; its id."""
    client = container.connect()
    container.inspect_image()
    key = warm_key(container)
    name = f"edgehub-warm-{key}"
    for _ in range(3):
        try:
            info = client.inspect_container(name)
            if (info.get("State") or {}).get("Running"):
                container.id = str(info["Id"])
                return container.id
            client.remove_container(name)
        except DockerNotFound:
            pass
        except DockerAPIError:
            time.sleep(0.2)  # being removed by its idle exit, or by a racing process
            continue
        labels = {MANAGED: "1", WARM: "1", WARM_KEY: key}
        command = ["sh", "-c", _IDLE_LOOP, str(int(keep_warm))]
        config = container.settings.config(command, container.image_attrs, labels)
        config["HostConfig"]["AutoRemove"] = True
        try:
            created = client.create_container(config, name)
            client.start_container(created)
        except DockerAPIError as error:
            if error.status == 409:
                continue  # another process created it first: adopt it
            raise RunnerError(
                f"cannot start a warm container of {container.settings.image}: {error.explanation}"
            ) from error
        container.id = created
        return created
    raise RunnerError(f"cannot start or reuse the warm container {name}; try again")
