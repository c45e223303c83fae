"""Opening the project for a command: hub.toml, its devices, and a HubContext."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.cli.output import LogPrinter

if TYPE_CHECKING:
    from edgehub.config.schema import HubConfig
    from edgehub.core.context import HubContext
    from edgehub.tracking.store import RunStore

__all__ = ["Project", "open_project"]


@dataclass
class Project:
    config: HubConfig

    @property
    def store_dir(self) -> Path:
        return self.config.store_dir

    def context(self, printer: LogPrinter, tags: dict[str, str] | None = None) -> HubContext:
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
        printer.attach(ctx.events)
        return ctx

    def store(self) -> RunStore:
        from edgehub.tracking.store import RunStore

        return RunStore(self.store_dir)


def open_project(config_path: str | None) -> Project:
    from edgehub.config import load_config

    return Project(load_config(config_path))
