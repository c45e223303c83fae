"""One tree of errors. Each message says what is wrong and what to do about it.

The CLI maps the classes to exit codes (see ``exit_code``) and prints the message on one line.
An error about one option names it by ``field`` (the operation's name for it: ``inputs``) and
writes ``{field}`` where the message names it; each front end words it (`EdgehubError.worded`:
the CLI as its flag, ``--input``), and ``str()`` gives the field's own name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

FIELD = "{field}"  # where a message names the option it is about


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``; did you mean 'X'?`` for the choice nearest ``word``, else "" (a message's hint)."""
    import difflib  # only for a word that is not known

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


class EdgehubError(Exception):
    """Base of every error edgehub raises on purpose."""

    exit_code: int = 1
    field: str | None = None

    def __init__(self, *args: object, field: str | None = None) -> None:
        super().__init__(*args)
        if field is not None:
            self.field = field

    def worded(self, name: Callable[[str], str]) -> str:
        """The message with its option named by ``name(field)``, a front end's word for it."""
        text = super().__str__()
        return text if self.field is None else text.replace(FIELD, name(self.field))

    def __str__(self) -> str:
        return self.worded(str)


class UsageError(EdgehubError):
    """The user asked for something that cannot work as asked (bad argument, bad file)."""

    exit_code = 2


class ConfigError(UsageError):
    """hub.toml is missing, malformed or names something that does not exist."""


class ModelError(UsageError):
    """A model file is missing or is not a model of the expected format."""


class InputDataError(UsageError):
    """Input tensors do not match the model (names, dtypes or shapes)."""


class DeviceError(UsageError, ValueError):
    """A device is unknown, or no device fits the component being run."""


class ProviderError(UsageError, ValueError):
    """No provider is registered for the device's provider type."""


class EnvironmentProblem(EdgehubError):
    """Something outside edgehub is not ready: the Docker daemon, an image, a device."""

    exit_code = 3


class DockerUnavailableError(EnvironmentProblem):
    """The Docker daemon cannot be reached."""


class ImageNotBuiltError(EnvironmentProblem):
    """A toolchain image has not been built yet."""


class GpuUnavailableError(EnvironmentProblem):
    """A step needs an NVIDIA GPU and none is visible here; nothing was started."""


class RunnerError(EnvironmentProblem):
    """A transport (local, Docker, SSH) failed to run a command or move a file."""


class CommandError(RunnerError):
    """A command ran and exited non-zero."""

    def __init__(
        self, message: str, *, returncode: int, stdout: str = "", stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class CommandTimeout(RunnerError):
    """A command ran longer than its timeout and was stopped."""


class DeviceBusyError(EnvironmentProblem):
    """A device stayed held by another measurement (its lease) longer than the wait allowed."""


class DeviceUnhealthyError(EnvironmentProblem):
    """A board failed its health check before a measurement, or is quarantined after repeated
    failures (`hub devices unquarantine NAME` lets it back)."""


class OperationCancelled(EdgehubError):
    """The user stopped an operation (Ctrl-C, a signal, the TUI's cancel); its run is KILLED."""

    exit_code = 130


class CommandCancelled(RunnerError, OperationCancelled):
    """A command was cancelled from another thread (e.g. Ctrl-C in the TUI)."""

    exit_code = 130


class SSHConnectionError(RunnerError):
    """Connecting or authenticating to an SSH device failed."""


class HostKeyError(SSHConnectionError):
    """The SSH host key is unknown or does not match known_hosts."""


class UnsafeArchiveError(RunnerError):
    """An archive from a device tried to write outside its target directory."""


class DeviceOutputError(RunnerError):
    """What a device sent back broke a limit (an archive's size, files or depth, a result's
    size or nesting) or is not what it claims; the message names the limit to raise."""


class ToolchainError(EdgehubError, RuntimeError):
    """A toolchain step (compile, profile, invoke) failed."""

    exit_code = 4


class CompileError(ToolchainError):
    """Compilation failed."""


class ProfileError(ToolchainError):
    """Profiling failed."""


class InvokeError(ToolchainError):
    """Inference failed."""


class StoreError(EdgehubError):
    """The local run store cannot be read or written, or a run id is unknown."""


class StorageError(StoreError, EnvironmentProblem):
    """The run store's files cannot be written or read: permissions, a read-only file system,
    a full disk, a lock another process holds too long. The message names the path."""

    exit_code = 3


EXIT_REGRESSION = 5
"""Exit code of a comparison that found B slower than A beyond the allowed regression."""

EXIT_GOAL_FAILED = 6
"""Exit code of an evaluation (`hub exec eval --goal`) whose model missed a goal."""

EXIT_INCOMPARABLE = 7
"""Exit code of `hub runs compare --max-regression` when the two profiles' recorded conditions
differ beyond the thresholds of `tracking.comparability` (without ``--allow-incomparable``)."""


EXIT_NOT_REPRODUCED = 8
"""Exit code of `hub runs rerun` whose rerun did not reproduce the original: an invoke's outputs
or a compile's artifacts (or, where the toolchain is not deterministic, their outputs) differ."""


class RunNotFoundError(StoreError, UsageError):
    """A run id (or prefix) matches no run, or more than one."""

    exit_code = 2


class InvalidMeasurementError(UsageError):
    """A run's measurement holds numbers no verdict can use (NaN, inf, zero or negative
    latencies, text): `hub runs compare` and the regression gate refuse it; the message names
    the run and what is wrong."""
