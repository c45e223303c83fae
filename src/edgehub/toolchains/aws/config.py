"""`DeviceFarmConfig`: the settings of the ``aws`` provider (``[devices.<name>.aws]``).
Credentials are not settings: they come from the standard AWS chain and are never written to
hub.toml or the run store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from edgehub.core.device.spec import ProviderConfig
from edgehub.core.values import Matches, Range
from edgehub.errors import ConfigError

DEFAULT_REGION = "us-west-2"  # where Device Farm lives

_POSITIVE = Range(0, open_low=True)
_ARN = Matches(
    r"(arn:aws:devicefarm:[a-z0-9-]+:[0-9]*:[a-z-]+:[A-Za-z0-9/_-]+)?", "a Device Farm ARN"
)

_REGION = Matches(r"([a-z]{2}(-[a-z]+)+-[0-9]+)?", 'an AWS region like "us-west-2"')


@dataclass(frozen=True)
class DeviceFarmConfig(ProviderConfig):
    """Settings of the ``aws`` provider (AWS Device Farm).

    The phone is chosen by ``device_arn``, or ``device_pool_arn`` (its first available device), or
    the filters ``platform``, ``os_version``, ``manufacturer`` and ``model`` (the device's ``spec``
    narrows ``model`` when no filter is set). ``benchmark_binary`` is LiteRT's ``benchmark_model``
    built for Android arm64 (on this host; uploaded once per content). ``timeout`` bounds the run's
    active time (preparing and running on the phone); waiting in the queue is bounded by
    ``queue_timeout`` (0: no bound). ``poll_interval``: seconds between status checks.
    """

    provider_type: ClassVar[str] = "aws"

    project_arn: Annotated[str, _ARN] = field(
        default="", metadata={"help": "the Device Farm project's ARN"}
    )
    region: Annotated[str, _REGION] = field(
        default="",
        metadata={"help": f"Device Farm's AWS region (default: the ARNs', else {DEFAULT_REGION})"},
    )
    device_arn: Annotated[str, _ARN] = field(default="", metadata={"help": "one device's ARN"})
    device_pool_arn: Annotated[str, _ARN] = field(
        default="", metadata={"help": "a device pool's ARN"}
    )
    platform: str = field(default="ANDROID", metadata={"help": "ANDROID (iOS is not supported)"})
    os_version: str = field(default="", metadata={"help": 'OS version filter, e.g. "14"'})
    manufacturer: str = field(default="", metadata={"help": 'manufacturer filter, e.g. "Google"'})
    model: str = field(default="", metadata={"help": 'model filter, e.g. "Pixel 8"'})
    benchmark_binary: str = field(
        default="", metadata={"host_file": True, "help": "LiteRT benchmark_model for Android arm64"}
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


def farm_region(config: DeviceFarmConfig, device: str, *, run_arn: str = "") -> str:
    """The region every call for aws device ``device`` goes to: ``region`` when set, else the
    one its ARNs (and ``run_arn``, a run to resume) name, else `DEFAULT_REGION`. An ARN of
    another region than ``region``, or ARNs of two regions, is refused in one line
    (`~edgehub.errors.ConfigError`): a call would go to a region that has no such thing."""
    named = {
        key: arn.split(":")[3]
        for key, arn in (
            ("project_arn", config.project_arn),
            ("device_arn", config.device_arn),
            ("device_pool_arn", config.device_pool_arn),
            ("the run to resume", run_arn),
        )
        if arn.startswith("arn:") and arn.count(":") >= 4 and arn.split(":")[3]
    }
    where = f"under [devices.{device}.aws]"
    if config.region:
        for key, region in named.items():
            if region != config.region:
                raise ConfigError(
                    f"aws device {device!r}: {key} is in {region} but region = "
                    f'"{config.region}" {where}; set region = "{region}" or use an ARN of '
                    f"{config.region}"
                )
        return config.region
    regions = sorted(set(named.values()))
    if len(regions) > 1:
        listed = ", ".join(f"{key} in {region}" for key, region in named.items())
        raise ConfigError(
            f"aws device {device!r}: its ARNs name different regions ({listed}) {where}; "
            "use ARNs of one region"
        )
    return regions[0] if regions else DEFAULT_REGION
