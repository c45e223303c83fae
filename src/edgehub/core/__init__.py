"""The public core of edgehub: context, runs and paths."""

from edgehub.core.context import HubContext
from edgehub.core.hub_run import hub_run
from edgehub.paths import LocalPath, RemotePath
from edgehub.tracking.run_type import RunType

__all__ = ["HubContext", "LocalPath", "RemotePath", "RunType", "hub_run"]
