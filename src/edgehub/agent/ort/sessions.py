"""Creating onnxruntime sessions with clear errors, and reading their signatures."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..protocol import (
    Cancelled,
    MissingDependencyError,
    ModelError,
    Params,
    RuntimeFailure,
    UsageError,
    UserError,
    one_line,
)
from ..tensors import TensorSpec

OPTIMIZATION_LEVELS = ("disable", "basic", "extended", "all")


def import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise MissingDependencyError(
            f"onnxruntime cannot be imported here ({exc}): install onnxruntime"
        ) from exc
    return onnxruntime


def session_options(
    intra_op_threads: int | None = None,
    inter_op_threads: int | None = None,
    optimization_level: str = "all",
) -> Any:
    ort = import_ort()
    options = ort.SessionOptions()
    if intra_op_threads is not None:
        options.intra_op_num_threads = intra_op_threads
    if inter_op_threads is not None:
        options.inter_op_num_threads = inter_op_threads
    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    options.graph_optimization_level = levels[optimization_level]
    return options


@dataclass
class SessionSettings:
    """A request's ``providers`` (checked here, recorded resolved), ``intra_op_threads``,
    ``inter_op_threads`` and, where the command takes it, ``graph_optimization_level``."""

    providers: list[str]
    intra_op_threads: int | None
    inter_op_threads: int | None
    optimization_level: str = "all"

    @classmethod
    def read(cls, params: Params, optimization_level: bool = False) -> SessionSettings:
        providers = resolve_providers(params.string_list("providers"))
        params.resolved["providers"] = providers
        intra = params.integer("intra_op_threads", None, minimum=0)
        inter = params.integer("inter_op_threads", None, minimum=0)
        if not optimization_level:
            return cls(providers, intra, inter)
        level = params.choice("graph_optimization_level", OPTIMIZATION_LEVELS, "all")
        return cls(providers, intra, inter, level)

    def options(self) -> Any:
        return session_options(
            self.intra_op_threads, self.inter_op_threads, self.optimization_level
        )

    def create(self, path: Path) -> Any:
        """A session for ``path`` with these settings."""
        return create_session(path, self.options(), self.providers)


def resolve_providers(requested: Sequence[str] | None) -> list[str]:
    """``None`` means CPU only (reproducible); otherwise every name must be available here."""
    ort = import_ort()
    available = list(ort.get_available_providers())
    if not requested:
        return ["CPUExecutionProvider"]
    unknown = [p for p in requested if p not in available]
    if unknown:
        raise UsageError(
            f"execution provider(s) {', '.join(unknown)} not available in this onnxruntime "
            f"build; available: {', '.join(available)}"
        )
    return list(requested)


def create_session(path: Path, options: Any = None, providers: list[str] | None = None) -> Any:
    """An InferenceSession for ``path``; load failures are ModelErrors saying what to do."""
    ort = import_ort()
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=providers or ["CPUExecutionProvider"]
        )
    except Exception as exc:
        from ..models import not_onnx_error

        message = one_line(str(exc))
        if "INVALID_PROTOBUF" in message or "Protobuf parsing failed" in message:
            raise not_onnx_error(path) from exc
        raise ModelError(
            f"onnxruntime {ort.__version__} cannot load '{path.name}': {message}: check the "
            "model's opset/operators against this runtime version, or re-export it"
        ) from exc


@contextmanager
def run_failures() -> Iterator[None]:
    """A failure of onnxruntime's inside, as a `RuntimeFailure` in one line (`Cancelled` as is)."""
    try:
        yield
    except Cancelled:
        raise
    except Exception as exc:
        raise RuntimeFailure(f"onnxruntime failed running the model: {one_line(str(exc))}") from exc


def run_once(session: Any, feeds: Any) -> None:
    """``session.run`` on ``feeds`` (`run_failures`)."""
    with run_failures():
        session.run(None, feeds)


def input_specs(session: Any, model_path: Path | None = None) -> list[TensorSpec]:
    """The session's inputs; given the session's ``model_path`` (callers pass it only where
    random inputs are made: it reads the graph again), an integer input that indexes a table
    carries the table's size (`..models.index_limits`), which random values stay below."""
    specs = [TensorSpec.from_ort(arg) for arg in session.get_inputs()]
    limits = _index_limits(model_path) if model_path is not None else {}
    for spec in specs:
        spec.values_below = limits.get(spec.name)
    return specs


def _index_limits(path: Path) -> dict[str, int]:
    from ..models import index_limits, load_model

    try:
        return index_limits(load_model(path, load_external_data=False))
    except (UserError, MissingDependencyError):  # no onnx here, or an .ort model: no limits
        return {}


def output_specs(session: Any) -> list[TensorSpec]:
    return [TensorSpec.from_ort(arg) for arg in session.get_outputs()]


def session_signature(session: Any) -> dict[str, Any]:
    return {
        "inputs": [s.to_json() for s in input_specs(session)],
        "outputs": [s.to_json() for s in output_specs(session)],
    }
