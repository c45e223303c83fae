"""`device_agent`: the agent for a provider body that serves both ``local`` and ``ssh``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgehub.runners.protocol import SupportsAgentRelay
from edgehub.toolchains.agent_call import AgentCall

if TYPE_CHECKING:
    from edgehub.core.context import HubContext

__all__ = ["device_agent"]


def device_agent(
    ctx: HubContext, runtime: str, device: str | None, component: type[Any]
) -> AgentCall:
    """On a device whose runner can keep an agent session (`SupportsAgentRelay`: an ``ssh``
    device), the agent there (the device's Python and runtime); otherwise the agent in the
    runtime's pinned container on this host."""
    if isinstance(ctx.device(device or "local").runner, SupportsAgentRelay):
        from edgehub.toolchains.remote.ssh_agent import ssh_agent

        return ssh_agent(ctx, runtime, device, component)
    from edgehub.toolchains.local_session import local_agent

    return local_agent(ctx, runtime, device, component)
