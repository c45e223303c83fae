"""The runner protocol, as the seeds import it (`edgehub.core.device`): it lives with the
transports in `edgehub.runners.protocol`."""

from edgehub.runners.protocol import CommandResult, CommandRunner, SupportsExchange

__all__ = ["CommandResult", "CommandRunner", "SupportsExchange"]
