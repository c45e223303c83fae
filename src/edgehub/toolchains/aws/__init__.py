"""AWS Device Farm (``aws`` devices): `TFLiteProfiler` on Android phones with LiteRT's
``benchmark_model``, through the user's own AWS account (botocore, imported on first use).

`DeviceFarmConfig` is the provider's settings table; `PROVIDERS` the module that registers
the provider; `resume_device_farm_run` attaches a profile to a run scheduled earlier.
"""

from __future__ import annotations

from typing import Any

from edgehub.toolchains.aws.config import DeviceFarmConfig

__all__ = ["PROVIDERS", "DeviceFarmConfig", "resume_device_farm_run"]

PROVIDERS = "edgehub.toolchains.aws.profile"  # importing it registers the provider


def resume_device_farm_run(*args: Any, **kwargs: Any) -> Any:
    """See `edgehub.toolchains.aws.profile.resume_device_farm_run`."""
    from edgehub.toolchains.aws.profile import resume_device_farm_run as resume

    return resume(*args, **kwargs)
