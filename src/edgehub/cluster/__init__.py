"""Sweeps and evals on a Ray cluster: each sweep cell, or each shard of an eval's samples, a
Ray task; each result back to the driver's store.

`address` reads and checks a cluster address (no Ray); `dispatch` holds `RayExecutor`, the
`edgehub.ops.sweep.CellExecutor` the front end passes for ``--cluster``; `worker` is what a
cell's task runs on a node; `shards` holds `RayShards`, the
`edgehub.ops.eval.shards.SampleExecutor` of ``hub exec eval --cluster``, and its task. Ray (the
``ray`` extra) is imported only by `dispatch`, `worker` and `shards`, so only when
``--cluster`` is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import EnvironmentProblem, UsageError

if TYPE_CHECKING:
    from edgehub.cluster.dispatch import RayExecutor
    from edgehub.cluster.shards import RayShards
    from edgehub.config.schema import HubConfig

__all__ = ["cluster_address", "ray_executor", "ray_shards"]


def cluster_address(flag: str | None, configured: str | None) -> str | None:
    """The address ``--cluster`` asks for: ``flag``, or hub.toml's ``[cluster] address``
    where the flag came alone (``""``); None without the flag."""
    if flag is None:
        return None
    address = flag or configured
    if not address:
        raise UsageError(
            "--cluster needs an address: --cluster ray://HOST:10001 (or local:N), or "
            'address = "..." in the [cluster] table of hub.toml'
        )
    return address


def ray_executor(address: str) -> RayExecutor:
    """A `RayExecutor` for ``address`` (not yet connected); exit 3 in one line without Ray."""
    from edgehub.cluster.address import parse_address

    where = parse_address(address)
    try:
        from edgehub.cluster.dispatch import RayExecutor
    except ImportError as error:
        raise _no_ray(error) from None
    return RayExecutor(where)


def ray_shards(address: str, config: HubConfig) -> RayShards:
    """A `RayShards` for ``address`` and the project of ``config`` (not yet connected); exit
    3 in one line without Ray, or where the address does not answer."""
    from edgehub.cluster.address import parse_address

    where = parse_address(address)
    where.check_reachable()  # out of reach: said before the dataset is read
    try:
        from edgehub.cluster.shards import RayShards
    except ImportError as error:
        raise _no_ray(error) from None
    return RayShards(where, config)


def _no_ray(error: ImportError) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"--cluster needs Ray, which is not installed ({error}); "
        "install it with: pip install 'edgehub[ray]'"
    )
