"""Opening a project: its hub.toml, its devices, its run store and a context to run in."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.config.schema import HubConfig
    from edgehub.core.context import HubContext
    from edgehub.events import LogEvent
    from edgehub.tracking.store import RunStore


Subscriber = Callable[["LogEvent"], None]


@dataclass
class Project:
    """A loaded hub.toml (or the defaults when there is none)."""

    config: HubConfig

    @property
    def store_dir(self) -> Path:
        """``$EDGEHUB_STORE`` if set, else hub.toml's ``[project] store``."""
        env = os.environ.get("EDGEHUB_STORE")
        return Path(env).expanduser() if env else self.config.store_dir

    def context(
        self, subscriber: Subscriber | None = None, tags: dict[str, str] | None = None
    ) -> HubContext:
        """A `HubContext` with hub.toml's devices; ``subscriber`` receives its events."""
        from edgehub.config import to_devices
        from edgehub.core.context import HubContext

        source = str(self.config.path.name) if self.config.path else "hub.toml (none found)"
        ctx = HubContext(
            project_name=self.config.project.name,
            artifact_base_dir=self.store_dir,
            devices=to_devices(self.config),
            auto_connect=False,
            tags=tags,
            device_source=source,
            image_tags=dict(self.config.images.tags),
        )
        if subscriber is not None:
            ctx.events.subscribe(subscriber)
        return ctx

    def store(self) -> RunStore:
        from edgehub.tracking.store import RunStore

        return RunStore(self.store_dir)


def open_project(config_path: str | Path | None = None) -> Project:
    """The project of ``config_path``, else of the nearest hub.toml, else the defaults."""
    from edgehub.config import load_config

    return Project(load_config(config_path))
