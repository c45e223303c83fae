"""`DeviceTool`: one provider call of a command-line tool on a device (over its runner).

Models are uploaded once per content to ``<workspace>/models/<sha256[:16]>/<name>``; everything
else of a run lives in ``<workspace>/<run directory name>/``, which the tool's own command
creates (no separate ``mkdir``). The context removes the workspace when it exits.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TypeVar

from edgehub.errors import DeviceError, ToolchainError
from edgehub.runners.outcome import killed_note
from edgehub.runners.protocol import (
    CommandResult,
    CommandRunner,
    Exchange,
    SupportsContentUpload,
    SupportsExchange,
)
from edgehub.runners.streaming import last_line

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.core.device.spec import Device, ProviderConfig


C = TypeVar("C", bound="ProviderConfig")

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\Z")
# `sh -c` prologue: make the directories named before the command, then exec the command.
_MKDIRS_THEN_EXEC = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do mkdir -p -- "$1" || exit 125; shift; n=$((n-1)); '
    'done; exec "$@"'
)


def device_file_name(name: str, fallback: str) -> str:
    """``name`` if it is a plain file name, else ``fallback`` (keeping a plain suffix)."""
    if _SAFE_NAME.match(name):
        return name
    suffix = os.path.splitext(name)[1]
    return fallback + (suffix if _SAFE_NAME.match("x" + suffix) else "")


def put_content(runner: CommandRunner, local: Path, remote: PurePosixPath) -> None:
    """Upload ``local`` to a path named by its content (a file there already is taken as it,
    where the runner can tell)."""
    if isinstance(runner, SupportsContentUpload):
        runner.put_content(local, remote)
    else:
        runner.put(local, remote)


@dataclass
class DeviceTool:
    """A tool on ``device`` for the current run of ``ctx``; ``tool`` names it in messages."""

    ctx: HubContext
    device: Device
    runner: CommandRunner
    tool: str

    @property
    def run_dir(self) -> PurePosixPath:
        """This run's directory on the device (made by the first `put` or `call` that needs it)."""
        return self.ctx.device_workspace(self.device.name) / self.ctx.artifact_dir.name

    @contextmanager
    def staged(self) -> Iterator[Path]:
        """A new directory (the run's ``device_stage``) to gather what goes up in, removed
        however the step ends."""
        stage = self.ctx.artifact_dir / "device_stage"
        try:
            stage.mkdir()
            yield stage
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def push_model(self, model: Path) -> PurePosixPath:
        """Upload ``model`` under its content hash (skipped when already there); its path."""
        from edgehub.tracking.artifacts import content_hash

        digest = content_hash(model)[:16]
        name = device_file_name(model.name, "model")
        remote = self.ctx.device_workspace(self.device.name) / "models" / digest / name
        put_content(self.runner, model, remote)
        return remote

    def push(self, local: Path, relative: str) -> PurePosixPath:
        """Upload a file or directory into the run directory; its path there."""
        remote = self.run_dir / relative
        self.runner.put(local, remote)
        return remote

    def fetch(self, remote: PurePosixPath, local: Path) -> Path:
        self.runner.get(remote, local)
        return local

    def call(
        self,
        argv: Sequence[str],
        *,
        failure: type[ToolchainError],
        make_dirs: Sequence[PurePosixPath] = (),
        timeout: float | None = None,
    ) -> CommandResult:
        """Run ``argv`` (after making ``make_dirs``) in one remote command; its output is kept
        in the run directory as ``<tool>.stdout.txt`` / ``.stderr.txt``. A non-zero exit is
        ``failure`` with the tool's last error line."""
        words = [str(word) for word in argv]
        if make_dirs:
            words = ["sh", "-c", _MKDIRS_THEN_EXEC, "edgehub", str(len(make_dirs)),
                     *map(str, make_dirs), *words]  # fmt: skip
        result = self.runner.run(words, timeout=timeout, check=False)
        return self._checked(argv, result, failure, make_dirs)

    def exchange(
        self,
        stage: Path,
        argv: Sequence[str],
        *,
        fetch: str,
        local: Path,
        failure: type[ToolchainError],
        timeout: float | None = None,
    ) -> Path:
        """Upload directory ``stage`` as the run directory, run ``argv`` (the run directory's
        paths given in full), download its folder ``fetch`` to ``local``: one round trip where
        the runner offers it (the output then all comes as stderr), else put, `call` and get.
        Failures as in `call`; returns ``local``."""
        words = [str(word) for word in argv]
        if not isinstance(self.runner, SupportsExchange):
            self.runner.put(stage, self.run_dir)
            self.call(words, failure=failure, timeout=timeout)
            return self.fetch(self.run_dir / fetch, local)
        result = self.runner.exchange(
            Exchange(stage, self.run_dir, words, fetch=fetch, local=local, timeout=timeout)
        )
        self._checked(words, result, failure)
        return local

    def _checked(
        self,
        argv: Sequence[str],
        result: CommandResult,
        failure: type[ToolchainError],
        make_dirs: Sequence[PurePosixPath] = (),
    ) -> CommandResult:
        local = self.ctx.artifact_dir
        (local / f"{self.tool}.stdout.txt").write_text(result.stdout)
        (local / f"{self.tool}.stderr.txt").write_text(result.stderr)
        if result.returncode == 0:
            return result
        where = f"device {self.device.name!r}"
        if result.returncode == 127:
            raise failure(
                f"{argv[0]} not found on {where}; install {self.tool} there or set its path "
                f"in the device's [{self.tool}] settings in hub.toml"
            )
        last = last_line(result.stderr, result.stdout) or "no output"
        if result.returncode == 125 and make_dirs:
            raise failure(f"cannot create {make_dirs[0]} on {where}: {last}")
        killed = killed_note(result.returncode)
        if killed:
            raise failure(f"{self.tool} on {where} was {killed}; last output: {last}")
        raise failure(f"{self.tool} failed on {where} (exit {result.returncode}): {last}")


def device_tool(
    ctx: HubContext, device: str | None, component: type, tool: str, settings: type[C]
) -> tuple[DeviceTool, C]:
    """The `DeviceTool` for ``device`` (a name resolved by the component's dispatch), and the
    device's ``settings`` for ``component`` (their defaults where it gives none)."""
    dev = ctx.device(device or "local")
    if dev.runner is None:
        raise DeviceError(
            f"device {dev.name!r} has no runner; give it an [devices.{dev.name}.ssh] table in "
            "hub.toml"
        )
    config = dev.get_provider_config(settings, component) or settings()
    return DeviceTool(ctx, dev, dev.runner, tool), config
