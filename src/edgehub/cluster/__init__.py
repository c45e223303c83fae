"""Sweeps on a Ray cluster: each cell a Ray task, each result back as a run bundle.

`address` reads and checks a cluster address (no Ray); `dispatch` holds `RayExecutor`, the
`edgehub.ops.sweep.CellExecutor` the front end passes for ``--cluster``; `worker` is what a task
runs on a node. Ray (the ``ray`` extra) is imported only by `dispatch` and `worker`, so only
when ``--cluster`` is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import EnvironmentProblem

if TYPE_CHECKING:
    from edgehub.cluster.dispatch import RayExecutor

__all__ = ["ray_executor"]


def ray_executor(address: str) -> RayExecutor:
    """A `RayExecutor` for ``address`` (not yet connected); exit 3 in one line without Ray."""
    from edgehub.cluster.address import parse_address

    where = parse_address(address)
    try:
        from edgehub.cluster.dispatch import RayExecutor
    except ImportError as error:
        raise EnvironmentProblem(
            f"--cluster needs Ray, which is not installed ({error}); "
            "install it with: pip install 'edgehub[ray]'"
        ) from None
    return RayExecutor(where)
