"""Warm containers: one per settings, shared by processes, gone after ``keep_warm`` idle seconds.

The container's main process exits (and auto-remove deletes the container) once it has been
idle that long: no job running, and none started or ended. Every job runs under a wrapper
that registers its pid in ``/tmp/.edgehub-busy`` while it runs and touches a file when it
starts and ends, so a job longer than ``keep_warm`` keeps the container alive, and a job that
was killed (its pid gone) no longer does; the resident agent server marks its own jobs there
(``EDGEHUB_AGENT_BUSY_DIR``, `BUSY_DIR`).

Where the daemon is local and this process can share a folder with the container's user, the
container also mounts the host folder of ``docker/channel.py`` at `CHANNEL_MOUNT`, through
which this process reaches the resident agent directly; `Container.channel` is then that host
folder. `benchmarks/bench_ort_local.py` (b), (e) keeps a warm job's wall time and host CPU
against ``docker exec`` of a bare script.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from edgehub.errors import RunnerError
from edgehub.runners.docker.channel import CHANNEL_MOUNT, channel_dir
from edgehub.runners.docker.client import DockerAPIError, DockerNotFound
from edgehub.runners.docker.container import Container
from edgehub.runners.docker.owner import MANAGED, WARM, WARM_KEY

CHANNEL_VERSION = "channel-1"  # containers made before the channel are not adopted

_ALIVE = "/tmp/.edgehub-alive"
_BUSY = "/tmp/.edgehub-busy"
BUSY_DIR = _BUSY
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
        settings.gpus,
        sorted(settings.labels.items()),
        os.getuid(),
        CHANNEL_VERSION,
    ]
    if settings.cpuset is not None:  # only then, so that unpinned keys stay as they were
        parts.append(("cpuset", settings.cpuset))
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def start_warm(container: Container, keep_warm: float) -> str:
    """Adopt the running warm container of ``container``'s settings, or start one that removes
    itself after ``keep_warm`` idle seconds; its id."""
    client = container.connect()
    container.inspect_image()
    key = warm_key(container)
    name = f"edgehub-warm-{key}"
    # the direct channel's host folder, where this process can share one with the container
    channel = container.shared_folder(lambda: channel_dir(key))
    for _ in range(3):
        try:
            info = client.inspect_container(name)
            if (info.get("State") or {}).get("Running"):
                container.id = str(info["Id"])
                container.channel = channel if _mounts(info, channel) else None
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
        if channel is not None:
            config["HostConfig"]["Mounts"].append(
                {"Type": "bind", "Source": str(channel), "Target": CHANNEL_MOUNT}
            )
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
        container.channel = channel
        return created
    raise RunnerError(f"cannot start or reuse the warm container {name}; try again")


def _mounts(info: dict[str, object], channel: Path | None) -> bool:
    """Whether the running container ``info`` mounts ``channel`` at `CHANNEL_MOUNT`."""
    mounts = info.get("Mounts")
    if channel is None or not isinstance(mounts, list):
        return False
    return any(
        isinstance(m, dict)
        and m.get("Destination") == CHANNEL_MOUNT
        and m.get("Source") == str(channel)
        for m in mounts
    )
