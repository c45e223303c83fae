"""Holding a device for a block of work: leases keyed by the board, labgrid places, board health.

Operations ask only for a held device (`hold`, a context manager yielding a `HeldDevice`); the
modules here do the rest: `leases` (an ``flock`` per board, in the directory `lease_dir` checks),
`boards` (which board a device is), `labgrid_pool` and `labgrid_client` (places of a shared
pool), `place_holders` (who holds a place, take-overs, release) and `board_health` (probes and
quarantine). This package imports nothing of ``edgehub.ops``.
"""

from edgehub.acquire.hold import HeldDevice, board_count, hold, needs_hold, place_runner

__all__ = ["HeldDevice", "board_count", "hold", "needs_hold", "place_runner"]
