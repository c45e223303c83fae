"""The ``ssh`` provider's plumbing: edgehub's agent run by the device's own Python and runtime.

Everything large goes once, named by its content: the agent zipapp (to
``~/.cache/edgehub/agent/``), models and inputs of 1 MiB or more (once per context, reaching
each call as a link), and datasets (`SupportsSharedInput`: once per device, across processes,
under ``~/.cache/edgehub/datasets/<sha256[:32]>/``, reused only where the device's Python,
hashing it as `hash_path` does (`DEVICE_HASH`), gives the host's hash; the connection's
janitor removes those unused for 30 days). With ``resident`` (the default) the first call
starts an agent server on the device that keeps Python and the runtime loaded, and the
runner's relay hands it each later job in one round trip.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from edgehub.errors import DeviceError
from edgehub.runners.protocol import (
    FOUND,
    RESENT,
    SENT,
    UNCHECKED,
    CommandResult,
    CommandRunner,
    Exchange,
    SupportsAgentRelay,
    SupportsExchange,
)
from edgehub.toolchains.agent_call import AgentCall
from edgehub.toolchains.remote.config import SSHAgentConfig
from edgehub.toolchains.remote.device_tool import put_content

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


SHARED_MIN_BYTES = 1024 * 1024
MODEL_SUFFIXES = frozenset({".onnx", ".tflite", ".data", ".onnx_data"})
AGENT_DIR = PurePosixPath(".cache/edgehub/agent")
DATASET_DIR = PurePosixPath(".cache/edgehub/datasets")
# `sh -c` words: a complete upload ($1) takes its content-named place ($2), unless one did first
_TAKE_PLACE = 'if [ -e "$2" ]; then rm -rf -- "$1"; else mv -- "$1" "$2"; fi'
# `sh -c` words: $1 a dataset, $2 the device's Python, $3 `DEVICE_HASH`: exit 3 where it is not
# there, else its folder (the cache's entry) is touched and its content hash printed
_FOUND_HASHED = 'test -e "$1" || exit 3; touch -c -- "${1%/*}"; exec "$2" -c "$3" "$1"'
# `sh -c` words: an upload ($1) takes the place of a dataset ($2) changed on the device (moved
# aside first, then removed), unless another process put one there meanwhile
_REPLACE = (
    'if [ -e "$2" ]; then mv -- "$2" "$1.stale"; fi; '
    'if [ -e "$2" ]; then rm -rf -- "$1"; else mv -- "$1" "$2"; fi; rm -rf -- "$1.stale"'
)
# `hash_path` (edgehub.tracking.artifacts) in the device's Python: of a file, its bytes; of a
# folder, each file's relative name, NUL, bytes, NUL, in the order of their paths' parts
DEVICE_HASH = """
import hashlib, os, sys
top = sys.argv[1]
digest = hashlib.sha256()
def feed(path):
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
if os.path.isdir(top):
    names = []
    for root, dirs, files in os.walk(top):
        for name in files:
            if os.path.isfile(os.path.join(root, name)):
                names.append(os.path.relpath(os.path.join(root, name), top).split(os.sep))
    for parts in sorted(names):
        digest.update("/".join(parts).encode() + b"\\0")
        feed(os.path.join(top, *parts))
        digest.update(b"\\0")
else:
    feed(top)
print(digest.hexdigest())
"""


@runtime_checkable
class _RelayRunner(SupportsAgentRelay, SupportsExchange, CommandRunner, Protocol):
    """What this provider needs of a device's runner (the SSH runner offers it)."""


class _SharedInputs:
    """The runner as `AgentCall` sees it: staged directories (``put``, ``exchange``,
    ``agent_exchange``) send model-sized files once, by content, and carry a link to them; a
    dataset is placed once per device (`SupportsSharedInput`); the rest goes to the runner as
    it is."""

    def __init__(self, runner: _RelayRunner, store: PurePosixPath, python: str) -> None:
        self._runner = runner
        self._store = store
        self._python = python

    def run(
        self, argv: Sequence[str], cwd: str | PurePath | None = None, **options: Any
    ) -> CommandResult:
        return self._runner.run(argv, cwd, **options)

    def get(self, remote: str | PurePath, local: Path) -> None:
        self._runner.get(remote, local)

    def cancel(self) -> None:
        self._runner.cancel()

    def __enter__(self) -> _SharedInputs:
        self._runner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._runner.__exit__(*exc_info)

    def put(self, local: Path, remote: str | PurePath) -> None:
        self._share_inputs(local)
        self._runner.put(local, remote)

    def exchange(self, job: Exchange) -> CommandResult:
        self._share_inputs(job.stage)
        return self._runner.exchange(job)

    def agent_exchange(self, job: Exchange, socket: str) -> CommandResult | None:
        self._share_inputs(job.stage)
        links = self._runner.absolute_path(self._store)
        return self._runner.agent_exchange(replace(job, links=links), socket)

    def share_input(self, samples: Path, digest: Callable[[], str]) -> tuple[str, str]:
        """`SupportsSharedInput.share_input` of dataset ``samples`` (a file or directory whose
        content hash, as `hash_path` takes it, ``digest()`` gives): `FOUND` where the device's
        hash of its copy is that, `RESENT` where it was changed on the device (replaced by
        this host's), `UNCHECKED` where the device could not hash it (replaced all the same)."""
        name = "samples" if samples.is_dir() else "samples.npz"
        expected = digest()
        final = self._runner.absolute_path(f"~/{DATASET_DIR}/{expected[:32]}/{name}")
        # there already: its folder is touched (the device's cache prunes by last use), and
        # its copy hashed there
        found = self._runner.run(
            ["sh", "-c", _FOUND_HASHED, "edgehub", final, self._python, DEVICE_HASH],
            hide=True,
            check=False,
        )
        if found.ok and found.stdout.strip() == expected:
            return final, FOUND
        part = f"{final}.{secrets.token_hex(4)}.edgehub-part"
        self._runner.put(samples, part)
        if found.returncode == 3:  # not there
            self._runner.run(["sh", "-c", _TAKE_PLACE, "edgehub", part, final], hide=True)
            return final, SENT
        self._runner.run(["sh", "-c", _REPLACE, "edgehub", part, final], hide=True)
        return final, RESENT if found.ok else UNCHECKED

    def _share_inputs(self, stage: Path) -> None:
        inputs = Path(stage) / "in"
        if inputs.is_dir():
            for path in sorted(inputs.rglob("*")):
                if path.is_symlink() or not path.is_file():
                    continue
                if path.suffix in MODEL_SUFFIXES or path.stat().st_size >= SHARED_MIN_BYTES:
                    self._share(path)

    def _share(self, path: Path) -> None:
        from edgehub.tracking.artifacts import content_hash

        target = self._store / content_hash(path)[:16] / "data"
        put_content(self._runner, path, target)
        path.unlink()  # the staged copy is a link or copy of the caller's file
        path.symlink_to(str(target))


def ssh_agent(ctx: HubContext, runtime: str, device: str | None, component: type[Any]) -> AgentCall:
    """An `AgentCall` on device ``device`` (provider ``ssh``) in this run's directory there."""
    from edgehub.agent.bundle import agent_hash, build_agent_zipapp
    from edgehub.paths import cache_subdir

    dev = ctx.device(device or "local")
    runner = dev.runner
    if not isinstance(runner, _RelayRunner):
        raise DeviceError(
            f"device {dev.name!r} has provider 'ssh' but no [devices.{dev.name}.ssh] table in "
            "hub.toml to reach it"
        )
    config = dev.get_provider_config(SSHAgentConfig, component) or SSHAgentConfig()
    zipapp = build_agent_zipapp(cache_subdir("agent"))
    remote_agent = f"~/{AGENT_DIR}/edgehub-agent-{agent_hash()[:16]}.pyz"
    runner.put_content(zipapp, remote_agent)
    agent = runner.absolute_path(remote_agent)
    workspace = ctx.device_workspace(dev.name)
    server = None
    launcher = ["taskset", "-c", ctx.pin_cpus] if ctx.pin_cpus else []  # one word each, quoted
    if config.resident:
        from edgehub.core.runtimes import get_runtime

        namespace = get_runtime(runtime).agent_namespace or runtime
        server = str(workspace / f"agent-{namespace}.sock")
        runner.on_release(_stop_server_script(server), key=server)
        relay = [*launcher, config.python, agent, "relay", "--socket", server, "--preload"]
        relay.append(namespace)
        runner.agent_relay(server, relay)
    ctx.client.log_environment({"device_python": config.python, "runtime": runtime})
    shared = _SharedInputs(runner, workspace / "shared", config.python)
    return AgentCall(
        shared,
        workspace / ctx.artifact_dir.name,
        ctx.artifact_dir,
        python=config.python,
        server=server,
        agent=agent,
        launcher=launcher,
        device=dev.name,
    )


def _stop_server_script(socket_path: str) -> str:
    """A shell line that stops the agent server listening on ``socket_path`` (and its jobs)."""
    quoted = shlex.quote(socket_path)
    return (
        f"s={quoted}; for d in /proc/[0-9]*; do "
        'if tr "\\0" " " < "$d/cmdline" 2>/dev/null | grep -qF -- "--socket $s"; then '
        'kill -TERM "${d#/proc/}" 2>/dev/null; fi; done; exit 0'
    )
