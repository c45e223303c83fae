"""`deferred`: a callable named ``"module:name"``, imported on its first call.

A runtime descriptor names what only some commands call (an A/B, a dataset's batch runner)
this way, so that describing a runtime for a plain invoke imports none of it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def deferred(target: str) -> Callable[..., Any]:
    """A function calling ``module:name`` (imported when first called) with its arguments."""
    module, _, name = target.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{target}``, imported on the first call."
    return call
