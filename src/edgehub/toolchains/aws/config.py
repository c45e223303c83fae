"""`DeviceFarmConfig`: the settings of the ``aws`` provider (``[devices.<name>.aws]``), which
profiles ``.tflite`` models on phones of AWS Device Farm with the user's own account.

Credentials are not settings: they come from the standard AWS chain (environment variables,
``~/.aws/credentials`` / ``AWS_PROFILE``, an instance or container role) and are never written
to hub.toml or the run store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from edgehub.core.device.spec import ProviderConfig
from edgehub.core.values import Matches, Range

__all__ = ["DeviceFarmConfig"]

_POSITIVE = Range(0, open_low=True)
_ARN = Matches(
    r"(arn:aws:devicefarm:[a-z0-9-]+:[0-9]*:[a-z-]+:[A-Za-z0-9/_-]+)?", "a Device Farm ARN"
)


@dataclass(frozen=True)
class DeviceFarmConfig(ProviderConfig):
    """Settings of the ``aws`` provider (AWS Device Farm).

    The phone is chosen by ``device_arn``, or ``device_pool_arn`` (its first available device),
    or the filters ``platform``, ``os_version``, ``manufacturer`` and ``model`` (the device's
    ``spec`` narrows ``model`` when no filter is set). ``benchmark_binary`` is LiteRT's
    ``benchmark_model`` built for Android arm64 (on this host; uploaded once per content).
    ``timeout`` bounds the run's active time (preparing and running on the phone); waiting in
    the queue is bounded by ``queue_timeout`` (0: no bound). ``poll_interval``: seconds between
    status checks.
    """

    provider_type: ClassVar[str] = "aws"

    project_arn: Annotated[str, _ARN] = field(
        default="", metadata={"help": "the Device Farm project's ARN"}
    )
    region: str = field(default="us-west-2", metadata={"help": "Device Farm's AWS region"})
    device_arn: Annotated[str, _ARN] = field(default="", metadata={"help": "one device's ARN"})
    device_pool_arn: Annotated[str, _ARN] = field(
        default="", metadata={"help": "a device pool's ARN"}
    )
    platform: str = field(default="ANDROID", metadata={"help": "ANDROID (iOS is not supported)"})
    os_version: str = field(default="", metadata={"help": 'OS version filter, e.g. "14"'})
    manufacturer: str = field(default="", metadata={"help": 'manufacturer filter, e.g. "Google"'})
    model: str = field(default="", metadata={"help": 'model filter, e.g. "Pixel 8"'})
    benchmark_binary: str = field(
        default="",
        metadata={"host_file": True, "help": "LiteRT benchmark_model for Android arm64"},
    )
    timeout: Annotated[float, _POSITIVE] = field(
        default=300.0, metadata={"help": "seconds of active time (on the phone) at most"}
    )
    queue_timeout: Annotated[float, Range(0)] = field(
        default=0.0, metadata={"help": "seconds queued at most (0: no limit)"}
    )
    poll_interval: Annotated[float, _POSITIVE] = field(
        default=5.0, metadata={"help": "seconds between status checks"}
    )
