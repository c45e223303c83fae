"""`hub_run`: track a plain function ``f(ctx, ...)`` as a run."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from edgehub.core.component.outputs import parent_run_id
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    from edgehub.core.context import HubContext

__all__ = ["hub_run"]

R = TypeVar("R")


def hub_run(
    run_type: RunType | str, *, name: str | None = None
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Decorate ``f(ctx, *args, **kwargs)`` so each call is a tracked run of ``run_type``."""

    def decorator(fn: Callable[..., R]) -> Callable[..., R]:
        run_name = name or fn.__name__

        @functools.wraps(fn)
        def wrapper(ctx: HubContext, *args: Any, **kwargs: Any) -> R:
            if not getattr(ctx, "is_active", False):
                raise RuntimeError(f"Cannot call {run_name!r} outside of an active HubContext")
            parent = parent_run_id((*args, *kwargs.values()))
            with ctx.open_run(run_type, run_name, component=fn.__name__, parent_run_id=parent):
                return fn(ctx, *args, **kwargs)

        return wrapper

    return decorator
