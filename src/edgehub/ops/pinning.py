"""``--pin-cpus CPUS``: measurements on chosen CPUs, where the device's runner can pin them.

The local providers run in a Docker container, which is then created with that cpuset (a
pinned warm container is its own, keyed by the cpuset); the ``ssh`` providers start the agent
under ``taskset -c CPUS`` on the device. The agent's conditions record what it got
(``cpuset``, ``cpu_affinity``, ``usable_cpus``). Other providers (Qualcomm AI Hub, trtexec
over SSH) cannot: a usage error says so before anything runs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


PINNABLE = ("local", "ssh")
_CPU_LIST = re.compile(r"\d{1,4}(-\d{1,4})?(,\d{1,4}(-\d{1,4})?)*")


def check_cpu_list(text: str) -> str:
    """``text`` as a CPU list such as ``0``, ``0-1`` or ``0,2-3``; a usage error otherwise."""
    cpus = text.strip()
    if not _CPU_LIST.fullmatch(cpus):
        raise UsageError(
            f"{{field}} {text!r}: give a CPU list such as 0, 0-1 or 0,2-3", field="pin_cpus"
        )
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        if high and int(high) < int(low):
            raise UsageError(
                f"{{field}} {text!r}: the range {part} runs backwards", field="pin_cpus"
            )
    return cpus


def pin_cpus(ctx: HubContext, cpus: str, device: str | None, components: list[Any]) -> None:
    """Pin ``ctx``'s measurements to ``cpus`` after checking that the device's provider of
    every component can."""
    from edgehub.core.component.dispatch import resolve_device

    cpus = check_cpu_list(cpus)
    for component in components:
        found = resolve_device(component, ctx, device)
        if found.provider_type not in PINNABLE:
            raise UsageError(
                f"{{field}}: device {found.name!r} runs {component.__name__} through provider "
                f"{found.provider_type!r}, which cannot pin CPUs (only {', '.join(PINNABLE)} "
                "can); drop {field} for it",
                field="pin_cpus",
            )
    ctx.pin_cpus = cpus
