"""The agent's wire format: errors, request parameters, result files. Pure standard library.

The host imports this module too (``load_result``), so it must never import numpy or onnxruntime.

Request: a JSON object of parameters for one command (``{"model": "m.onnx", "runs": 100}``);
unknown keys are rejected, so a typo on the host is an error rather than a silent default.
Relative paths are resolved against the agent's working directory.

Result (written atomically to ``--result``)::

    {"ok": true, "command": "ort.profile", "params": {...}, "metrics": {...}, "data": {...},
     "warnings": ["..."], "env": {...}, "agent_version": "0.1.0", "protocol": 1, "elapsed_s": 1.2}

    {"ok": false, "command": "ort.invoke", "error": {"kind": "InputDataError", "message": "...",
     "exit_code": 2, "user_error": true}, "detail": "<traceback, unexpected errors only>",
     "warnings": [...], "env": {...}, ...}

Exit codes: 0 success, 2 user error, 1 unexpected error, 130 cancelled. The error message is
one line saying what is wrong and what to do, also the last line written to stderr.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Sequence, overload

from .atomic import replacing
from .exit_codes import EXIT_CANCELLED as EXIT_CANCELLED
from .exit_codes import EXIT_OK as EXIT_OK
from .exit_codes import EXIT_UNEXPECTED as EXIT_UNEXPECTED
from .exit_codes import EXIT_USER as EXIT_USER

JSONDict = Dict[str, Any]


class AgentError(Exception):
    """An error the agent raises on purpose; ``kind`` in the result is the class name."""

    exit_code = EXIT_UNEXPECTED

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))

    @property
    def kind(self) -> str:
        return type(self).__name__


class UserError(AgentError):
    """The request cannot work as asked: the user (or the host) has to change something."""

    exit_code = EXIT_USER


class UsageError(UserError):
    """A bad request: unknown command, unknown or malformed parameter, impossible option."""


class ModelError(UserError):
    """The model file is missing, not an ONNX model, or cannot be loaded by the runtime."""


class InputDataError(UserError):
    """Input tensors do not match the model (names, dtypes, shapes) or cannot be read."""


class CalibrationDataError(InputDataError):
    """Calibration data is missing, unreadable or does not match the model's inputs."""


class MissingDependencyError(AgentError):
    """A package the command needs is not installed where the agent runs."""


class RuntimeFailure(AgentError):
    """The runtime failed while running a model that it had loaded."""


class Cancelled(AgentError):
    """The agent was interrupted (SIGINT/SIGTERM)."""

    exit_code = EXIT_CANCELLED


USER_ERROR_KINDS = frozenset(
    {"UserError", "UsageError", "ModelError", "InputDataError", "CalibrationDataError"}
)


def one_line(message: str) -> str:
    """Collapse a (possibly multi-line) message into one line."""
    parts = [p.strip() for p in str(message).splitlines() if p.strip()]
    return " | ".join(parts) if parts else "(no message)"


class CommandOutput:
    """What a command returns; the CLI adds ok/command/warnings/env around it. (A plain class:
    ``dataclasses`` would import ``inspect``, milliseconds of every cold job's start.)"""

    def __init__(
        self,
        params: JSONDict | None = None,
        metrics: JSONDict | None = None,
        data: JSONDict | None = None,
    ) -> None:
        self.params: JSONDict = {} if params is None else params
        self.metrics: JSONDict = {} if metrics is None else metrics
        self.data: JSONDict = {} if data is None else data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CommandOutput):
            return NotImplemented
        return (self.params, self.metrics, self.data) == (other.params, other.metrics, other.data)

    def __repr__(self) -> str:
        fields = f"params={self.params!r}, metrics={self.metrics!r}, data={self.data!r}"
        return f"CommandOutput({fields})"


_MISSING: Any = object()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Params:
    """Typed, validated access to a request's parameters.

    Each getter records the resolved value (defaults included) so that ``resolved`` is exactly
    what the command ran with; ``finish`` rejects keys no getter asked for.
    """

    def __init__(self, raw: Mapping[str, Any], command: str) -> None:
        if not isinstance(raw, Mapping):
            raise UsageError(f"{command}: the request must be a JSON object of parameters")
        self.raw: dict[str, Any] = dict(raw)
        self.command = command
        self.resolved: dict[str, Any] = {}

    def _get(self, key: str, default: Any) -> Any:
        if key in self.raw and self.raw[key] is not None:
            return self.raw[key]
        if default is _MISSING:
            raise UsageError(f"{self.command}: parameter '{key}' is required")
        return default

    def _bad(self, key: str, expected: str, value: Any) -> UsageError:
        return UsageError(
            f"{self.command}: parameter '{key}' must be {expected}, got {json.dumps(value)}"
        )

    def _checked(self, key: str, default: Any, valid: Callable[[Any], bool], expected: str) -> Any:
        """``key``'s value (``default`` where absent), checked by ``valid`` and recorded."""
        value = self._get(key, default)
        if value is not None and not valid(value):
            raise self._bad(key, expected, value)
        self.resolved[key] = value
        return value

    def string(self, key: str, default: Any = _MISSING) -> Any:
        return self._checked(key, default, lambda v: isinstance(v, str), "a string")

    @overload
    def path(self, key: str) -> str: ...
    @overload
    def path(self, key: str, required: bool) -> str | None: ...
    def path(self, key: str, required: bool = True) -> str | None:
        default = _MISSING if required else None
        path: str | None = self._checked(
            key, default, lambda v: isinstance(v, str) and v != "", "a non-empty path string"
        )
        return path

    def integer(self, key: str, default: Any = _MISSING, minimum: int | None = None) -> Any:
        value = self._checked(key, default, _is_int, "an integer")
        if value is not None and minimum is not None and value < minimum:
            raise self._bad(key, f"an integer >= {minimum}", value)
        return value

    def number(self, key: str, default: float, minimum: float = 0.0) -> float:
        def valid(v: Any) -> bool:
            return not isinstance(v, bool) and isinstance(v, (int, float)) and v >= minimum

        return float(self._checked(key, default, valid, f"a number >= {minimum:g}"))

    def boolean(self, key: str, default: bool) -> bool:
        return bool(self._checked(key, default, lambda v: isinstance(v, bool), "true or false"))

    def choice(self, key: str, choices: Sequence[str], default: Any = _MISSING) -> str:
        expected = "one of " + ", ".join(repr(c) for c in choices)
        return str(self._checked(key, default, lambda v: v in choices, expected))

    def string_list(self, key: str) -> list[str] | None:
        def valid(v: Any) -> bool:
            return isinstance(v, list) and all(isinstance(s, str) for s in v)

        strings: list[str] | None = self._checked(key, None, valid, "a list of strings")
        return strings

    def raw_value(self, key: str, default: Any = None) -> Any:
        value = self._get(key, default)
        self.resolved[key] = value
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.raw) - set(self.resolved))
        if unknown:
            raise UsageError(
                f"{self.command}: unknown parameter(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(self.resolved))}"
            )


_PLAIN = (str, int, bool, type(None))
_SMALL_JSON = 1 << 16  # documents up to this many characters are written indented


def json_safe(value: Any) -> Any:
    """Make ``value`` strict-JSON serializable (NaN/inf become null, tuples become lists)."""
    kind = type(value)  # the common types first: a layer table holds tens of thousands
    if kind in _PLAIN:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): json_safe(v) for k, v in value.items()}
    if kind is list:
        return [json_safe(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return json_safe(item())
    return str(value)


def write_json_atomic(path: str | Path, payload: Any) -> None:
    """Write strict JSON to ``path`` through a temporary file and a rename (a job's output:
    atomic, not flushed to disk; see `.atomic`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with replacing(target, durable=False) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json_text(payload) + "\n")


def json_text(payload: Any) -> str:
    """``payload`` as strict JSON: indented where small, else on one line (Python's fast
    encoder does not indent, and a big layer table would cost a tenth of a second or more)."""
    try:  # most payloads are plain already: a walk through a big layer table costs ms
        safe = payload
        text = json.dumps(safe, allow_nan=False)
    except (TypeError, ValueError):  # NaN or infinity, a Path, a numpy scalar, a tuple key
        safe = json_safe(payload)
        text = json.dumps(safe, allow_nan=False)
    return json.dumps(safe, indent=1, allow_nan=False) if len(text) <= _SMALL_JSON else text


class ResultFileError(ValueError):
    """A result file is missing or is not an agent result."""


def depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
    return bool(level)


def load_json_file(
    path: str | Path, what: str, max_bytes: int = 16 << 20, max_depth: int = 64
) -> Any:
    """The JSON document in ``path`` (from a device, so untrusted), refused with a one-line
    `ResultFileError` if it cannot be read, is larger than ``max_bytes``, is not JSON or nests
    deeper than ``max_depth``. ``what`` names it in messages."""
    p = Path(path)
    try:
        with p.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ResultFileError(f"{what} '{p}' cannot be read: {exc.strerror or exc}") from exc
    if len(raw) > max_bytes:
        raise ResultFileError(
            f"{what} '{p}' is over {max_bytes} bytes; refusing it (raise "
            "EDGEHUB_RESULT_MAX_BYTES to accept it)"
        )
    too_deep = ResultFileError(
        f"{what} '{p}' nests deeper than {max_depth} levels; refusing it (raise "
        "EDGEHUB_RESULT_MAX_DEPTH to accept it)"
    )
    try:
        document = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise ResultFileError(f"{what} '{p}' is not JSON: {one_line(str(exc))}") from None
    if depth_over(document, max_depth):
        raise too_deep
    return document


def load_result(path: str | Path, max_bytes: int = 16 << 20, max_depth: int = 64) -> JSONDict:
    """Read and sanity-check an agent result file (for the host; standard library only):
    on success it has ``params``, ``metrics``, ``data``, ``warnings`` and ``env``, on failure
    ``error`` = ``{kind, message, exit_code, user_error}``. A `ResultFileError` where
    `load_json_file` refuses it or it lacks ``ok``."""
    p = Path(path)
    result = load_json_file(p, "agent result", max_bytes, max_depth)
    if not isinstance(result, dict) or not isinstance(result.get("ok"), bool):
        raise ResultFileError(f"agent result '{p}' has no boolean 'ok' field")
    if result["ok"]:
        for key in ("params", "metrics", "data", "env"):
            if not isinstance(result.setdefault(key, {}), dict):
                raise ResultFileError(f"agent result '{p}' has a '{key}' that is not an object")
        if not isinstance(result.setdefault("warnings", []), list):
            raise ResultFileError(f"agent result '{p}' has 'warnings' that are not a list")
    else:
        error = result.get("error")
        if not isinstance(error, dict) or "message" not in error:
            raise ResultFileError(f"agent result '{p}' failed without an error message")
        if not isinstance(error.setdefault("kind", "AgentError"), str):
            error["kind"] = "AgentError"
        error.setdefault("user_error", error["kind"] in USER_ERROR_KINDS)
    return result


def error_payload(exc: BaseException, command: str | None) -> JSONDict:
    """The ``error`` block of a failed result for ``exc``."""
    if isinstance(exc, AgentError):
        kind, message, code = exc.kind, str(exc), exc.exit_code
    elif isinstance(exc, KeyboardInterrupt):
        kind, message, code = "Cancelled", "interrupted", EXIT_CANCELLED
    else:
        kind = type(exc).__name__
        what = f"{command} failed" if command else "the agent failed"
        message = one_line(f"{what} unexpectedly: {kind}: {exc}")
        code = EXIT_UNEXPECTED
    return {
        "kind": kind,
        "message": message,
        "exit_code": code,
        "user_error": code == EXIT_USER,
    }
