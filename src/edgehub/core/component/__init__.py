"""The component system of the public API."""

from edgehub.core.component.base import Component, NoProviderError
from edgehub.core.component.outputs import CompiledModel, ComponentOutput, MissingOutputError
from edgehub.core.component.provider_type import ProviderType
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam, RunLog
from edgehub.tracking.run_type import RunType

__all__ = [
    "CompiledModel",
    "Component",
    "ComponentOutput",
    "LoggedArtifact",
    "LoggedMetric",
    "LoggedParam",
    "MissingOutputError",
    "NoProviderError",
    "ProviderType",
    "RunLog",
    "RunType",
]
