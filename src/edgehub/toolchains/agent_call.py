"""Calling the device-side agent through any runner: ship it once, send a request, read the
result, and turn agent errors into edgehub errors."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from edgehub.core.device.runner import CommandRunner
from edgehub.errors import (
    EdgehubError,
    InputDataError,
    ModelError,
    RunnerError,
    ToolchainError,
    UsageError,
)

__all__ = ["AgentCall", "AgentResult"]

_USER_ERRORS: dict[str, type[EdgehubError]] = {
    "ModelError": ModelError,
    "InputDataError": InputDataError,
    "CalibrationDataError": InputDataError,
    "UsageError": UsageError,
    "UserError": UsageError,
}


@dataclass
class AgentResult:
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)


class AgentCall:
    """Runs agent commands on one runner, with files under ``workdir`` on its side.

    ``python`` is the interpreter on the runner's side. The zipapp is uploaded once per runner
    and hash (kept in ``/tmp/edgehub-agent/``), then reused by every run.
    """

    def __init__(
        self, runner: CommandRunner, workdir: PurePosixPath, local_dir: Path, python: str = "python3"
    ) -> None:
        self.runner = runner
        self.workdir = workdir
        self.local_dir = local_dir
        self.python = python
        self._agent: PurePosixPath | None = None

    def agent_path(self) -> PurePosixPath:
        """The zipapp on the runner's side, uploaded if this runner does not have it yet."""
        if self._agent is not None:
            return self._agent
        from edgehub.agent.bundle import build_agent_zipapp

        local = build_agent_zipapp()
        remote = PurePosixPath("/tmp/edgehub-agent") / local.name
        shipped: set[str] = getattr(self.runner, "_edgehub_agents", set())
        if str(remote) not in shipped:
            probe = self.runner.run(["test", "-f", str(remote)], hide=True, check=False)
            if probe.returncode != 0:
                self.runner.run(["mkdir", "-p", str(remote.parent)], hide=True)
                self.runner.put(local, remote)
            shipped.add(str(remote))
            try:
                self.runner._edgehub_agents = shipped  # type: ignore[attr-defined]
            except AttributeError:
                pass
        self._agent = remote
        return remote

    def put(self, local: Path, name: str | None = None) -> PurePosixPath:
        """Upload a file or directory into the workdir; returns its path there."""
        remote = self.workdir / (name or local.name)
        self.runner.put(local, remote)
        return remote

    def get(self, remote: PurePosixPath, local: Path) -> Path:
        self.runner.get(remote, local)
        return local

    def call(
        self,
        command: str,
        request: dict[str, Any],
        *,
        failure: type[ToolchainError],
        timeout: float | None = None,
    ) -> AgentResult:
        """Run ``command`` with ``request``; raise a user error or ``failure`` if it fails."""
        from edgehub.agent.protocol import ResultFileError, load_result

        agent = self.agent_path()
        stem = command.replace(".", "_")
        request_local = self.local_dir / f"{stem}_request.json"
        request_local.write_text(json.dumps(request, indent=1, default=str))
        request_remote = self.put(request_local)
        result_remote = self.workdir / f"{stem}_result.json"
        argv = [
            self.python,
            str(agent),
            command,
            "--request",
            str(request_remote),
            "--result",
            str(result_remote),
        ]
        outcome = self.runner.run(argv, cwd=self.workdir, timeout=timeout, check=False)
        result_local = self.local_dir / f"{stem}_result.json"
        try:
            self.runner.get(result_remote, result_local)
            result = load_result(result_local)
        except (RunnerError, ResultFileError) as error:
            tail = (outcome.stderr.strip() or outcome.stdout.strip()).splitlines()
            last = tail[-1] if tail else str(error)
            raise failure(
                f"{command} failed (exit {outcome.returncode}) without a result: {last}; "
                f"command: {shlex.join(argv)}"
            ) from None
        if not result["ok"]:
            error = result["error"]
            cls = _USER_ERRORS.get(error["kind"]) if error.get("user_error") else None
            raise (cls or failure)(str(error["message"]))
        return AgentResult(
            params=dict(result["params"]),
            metrics=dict(result["metrics"]),
            data=dict(result["data"]),
            warnings=list(result["warnings"]),
            env=dict(result["env"]),
        )
