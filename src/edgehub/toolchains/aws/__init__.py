"""AWS Device Farm (``aws`` devices): `TFLiteProfiler` on Android phones with LiteRT's
``benchmark_model``, through the user's own AWS account (`PROVIDERS`: the module registering it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.lazy import names_from
from edgehub.toolchains.aws.config import DeviceFarmConfig

if TYPE_CHECKING:
    from edgehub.toolchains.aws.profile import resume_device_farm_run

__all__ = ["PROVIDERS", "DeviceFarmConfig", "resume_device_farm_run"]

PROVIDERS = "edgehub.toolchains.aws.profile"  # importing it registers the provider
__getattr__ = names_from(__name__, {"resume_device_farm_run": "profile"})
