"""Refusing an engine this TensorRT or this GPU cannot load, before anything loads it.

The host sends what the engine recorded when it was built (``engine_record`` in the request, see
`engine_file.engine_record`); the agent compares it with the TensorRT it imports and the GPU's
compute capability (where ``nvidia-smi`` tells it) through `engine_file.engine_mismatch`.
"""

from __future__ import annotations

from typing import Any

from ..protocol import UsageError
from .engine_file import engine_mismatch, engine_problem
from .gpu import compute_capability
from .runtime import import_tensorrt


def require_engine_file(name: str) -> None:
    """Raise `engine_file.engine_problem`'s `UsageError` where the file ``name`` is not a
    TensorRT engine to run."""
    problem = engine_problem(name)
    if problem is not None:
        raise UsageError(problem)


def check_engine(record: Any) -> None:
    """Raise a one-line `UsageError` where ``record`` (a dict, or None: nothing recorded) does not
    match this runtime and GPU."""
    if not isinstance(record, dict) or not record:
        return
    trt = import_tensorrt()
    problem = engine_mismatch(record, trt.flavor, trt.version, compute_capability())
    if problem is not None:
        raise UsageError(problem)
