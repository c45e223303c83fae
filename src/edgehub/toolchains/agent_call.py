"""Calling the device-side agent through any runner, in one round trip per command.

Each call stages a directory (the agent zipapp, the request and the input files), uploads it,
runs the agent there, and fetches its ``out/`` directory; agent errors become edgehub errors.
What comes back is bounded before anything reads it: the result by
`~edgehub.limits.ResultLimits`, each ``.npz`` by `~edgehub.limits.FetchLimits`.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from edgehub.errors import (
    EdgehubError,
    InputDataError,
    ModelError,
    RunnerError,
    ToolchainError,
    UsageError,
)
from edgehub.fsutil import link_tree
from edgehub.limits import ResultLimits
from edgehub.runners.outcome import killed_note
from edgehub.runners.protocol import CommandRunner, Exchange, SupportsAgentChannel, SupportsExchange
from edgehub.runners.streaming import last_line
from edgehub.toolchains.npz_arrays import check_unpacked_size
from edgehub.user_files import link_or_copy_checked

AGENT_NAME = "edgehub-agent.pyz"
_USER_ERRORS: dict[str, type[EdgehubError]] = {
    "ModelError": ModelError,
    "InputDataError": InputDataError,
    "CalibrationDataError": InputDataError,
    "UsageError": UsageError,
    "UserError": UsageError,
}


_INVALID = "the measurement is invalid, so its run is recorded FAILED"


@dataclass
class AgentResult:
    """What the agent reported; ``files`` is the local ``out/`` directory it filled."""

    files: Path
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    command: str = "the agent"
    failure: type[ToolchainError] = ToolchainError

    def file(self, name: str) -> Path:
        """``files / name``, which must exist: a result that names an output the device did
        not send back is the command's failure, in one line naming the file."""
        path = self.files / name
        if not (path.exists() or path.is_symlink()):
            sent = sorted(p.name for p in self.files.iterdir()) if self.files.is_dir() else []
            raise self.failure(
                f"{self.command} reported success but the device returned no out/{name} "
                f"(it returned: {', '.join(sent[:10]) or 'nothing'})"
            )
        return path


@dataclass(eq=False)
class AgentCall:
    """Runs agent commands through ``runner``; each call works in ``workdir/<n>-<command>`` on the
    runner's side and in ``local_dir`` here. ``python`` is the interpreter there.

    ``server``: a socket path on the runner's side where a resident agent, with the runtime loaded,
    takes each job (started on first use). ``agent``: a zipapp already on the runner's side, run
    instead of sending one with every call. ``explain_exit``: a message for the exit status of an
    agent that ended without a result, where the runner knows why (else None). ``launcher``: words
    before the agent's command line (``taskset -c 0-1``). ``device`` names the device in errors.
    """

    runner: CommandRunner
    workdir: PurePosixPath
    local_dir: Path
    python: str = "python3"
    server: str | None = None
    agent: str | None = None
    explain_exit: Callable[[int], str | None] | None = None
    launcher: Sequence[str] = ()
    device: str = ""
    _calls: int = field(default=0, init=False, repr=False)

    def call(
        self,
        command: str,
        request: Mapping[str, Any],
        *,
        inputs: Mapping[str, Path] | None = None,
        failure: type[ToolchainError],
        timeout: float | None = None,
    ) -> AgentResult:
        """Run ``command``. ``inputs`` maps a name to a local file or directory; the request
        refers to it as ``in/<name>`` and writes outputs under ``out/``."""
        from edgehub.agent.protocol import ResultFileError, load_result

        limits = ResultLimits.from_env()
        self._calls += 1
        slot = f"{self._calls}-{command.replace('.', '_')}"
        remote = self.workdir / slot
        local = self.local_dir / slot
        stage = local / "stage"
        job = [command, "--request", "request.json", "--result", "out/result.json"]
        argv = [*self.launcher, self.python, self.agent or AGENT_NAME, *job]
        if self.server:  # a server runs the job, else this agent (which then starts one)
            argv[-len(job) : -len(job)] = ["--server", self.server]
        files = local / "out"
        exchange = isinstance(self.runner, SupportsExchange)
        try:  # the staged copies go however the call ends (an error, Ctrl-C, SIGTERM)
            (stage / "in").mkdir(parents=True)
            (stage / "out").mkdir()
            for name, path in (inputs or {}).items():
                link_or_copy_checked(Path(path), stage / "in" / name)
            (stage / "request.json").write_text(json.dumps(request, indent=1, default=str))
            outcome = None
            if self.server is not None and isinstance(self.runner, SupportsAgentChannel):
                # the resident agent straight from here (a warm container's agent channel);
                # None: it did not run there, and nothing ran
                direct = Exchange(stage, remote, job, fetch="out", local=files, timeout=timeout)
                outcome = self.runner.agent_exchange(direct, self.server)
                exchange = exchange or outcome is not None
            if outcome is None:
                if self.agent is None:  # the zipapp goes along with the job
                    from edgehub.agent.bundle import build_agent_zipapp
                    from edgehub.paths import cache_subdir

                    link_tree(build_agent_zipapp(cache_subdir("agent")), stage / AGENT_NAME)
                if isinstance(self.runner, SupportsExchange):  # one round trip where offered
                    outcome = self.runner.exchange(
                        Exchange(stage, remote, argv, fetch="out", local=files, timeout=timeout)
                    )
                else:
                    self.runner.put(stage, remote)
                    outcome = self.runner.run(argv, cwd=remote, timeout=timeout, check=False)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        try:
            if not exchange:
                self.runner.get(remote / "out", files)
            result = load_result(files / "result.json", limits.max_bytes, limits.max_depth)
        except (RunnerError, ResultFileError) as error:
            why = self.explain_exit(outcome.returncode) if self.explain_exit else None
            if why is not None:
                raise failure(f"{command}: {why}") from None
            last = last_line(outcome.stderr, outcome.stdout) or str(error)
            if (files / "result.json").exists():  # a result came back, but is not one
                last = str(error)
            killed = killed_note(outcome.returncode)
            if killed:
                head = f"{command} on {self._source()} was {killed}; last output: {last}"
            else:
                head = f"{command} failed (exit {outcome.returncode}) without a result: {last}"
            raise failure(f"{head}; command: {shlex.join(argv)} in {remote}") from None
        if not result["ok"]:
            problem = result["error"]
            cls = _USER_ERRORS.get(problem["kind"]) if problem.get("user_error") else None
            raise (cls or failure)(str(problem["message"]))
        for path in sorted(files.rglob("*.npz")):  # refused where it would unpack past limits
            if path.is_file() and not path.is_symlink():
                where = path.relative_to(files).as_posix()
                check_unpacked_size(path, f"out/{where} from {self._source()}")
        self._check_latencies(command, dict(result["metrics"]), files, failure)
        return AgentResult(
            files=files,
            params=dict(result["params"]),
            metrics=dict(result["metrics"]),
            data=dict(result["data"]),
            warnings=list(result["warnings"]),
            env=dict(result["env"]),
            command=command,
            failure=failure,
        )

    def _source(self) -> str:
        return f"device {self.device!r}" if self.device else "the device"

    def _check_latencies(
        self, command: str, metrics: dict[str, Any], files: Path, failure: type[ToolchainError]
    ) -> None:
        """The latencies the device reported, before anything records or compares them: its
        latency metrics finite and not negative (rounded to the microsecond, a median may be
        0), the samples (``*samples_us`` of each ``out/*.json``) finite positive numbers;
        else the command's failure, so the run is recorded FAILED with what was wrong."""
        from edgehub.tracking.verdict_numbers import number_problem

        source = self._source()
        for name, value in metrics.items():
            if "latency" in name and value is not None:  # None: not measured
                problem = number_problem([value], f"latency metric {name!r}", positive=False)
                if problem is not None:
                    raise failure(f"{command} on {source} returned {problem}; {_INVALID}")
        for path in sorted(files.glob("*.json")):
            if path.name == "result.json" or path.is_symlink() or not path.is_file():
                continue
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue  # not JSON: whoever reads it says so
            if not isinstance(document, dict):
                continue
            for key, values in document.items():
                if key.endswith("samples_us"):
                    problem = number_problem(values, f"latency samples ({key})")
                    if problem is not None:
                        raise failure(
                            f"{command} on {source} returned {problem} in out/{path.name}; "
                            f"{_INVALID}"
                        )
