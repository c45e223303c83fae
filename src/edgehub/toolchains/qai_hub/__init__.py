"""Qualcomm AI Hub (``qai_hub`` devices): providers of the ONNX Runtime and TFLite compilers,
profilers and invokers (`PROVIDERS`: the module of each, imported when a ``qai_hub`` device
first runs one of them), and the helpers `check_qai_hub`, `resume_job` and `run_on_devices`,
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.lazy import names_from
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    from edgehub.toolchains.qai_hub.client import QAIHubCheck, check_qai_hub
    from edgehub.toolchains.qai_hub.fanout import FanOutError, run_on_devices
    from edgehub.toolchains.qai_hub.resume import resume_job

__all__ = [
    "PROVIDERS",
    "FanOutError",
    "QAIHubCheck",
    "QAIHubConfig",
    "check_qai_hub",
    "resume_job",
    "run_on_devices",
]

# the module registering the providers of each kind of component, by its run type
PROVIDERS = {
    RunType.COMPILE: f"{__name__}.compile",
    RunType.PROFILE: f"{__name__}.profile",
    RunType.INFERENCE: f"{__name__}.invoke",
}
__getattr__ = names_from(
    __name__,
    {
        "QAIHubCheck": "client",
        "check_qai_hub": "client",
        "FanOutError": "fanout",
        "run_on_devices": "fanout",
        "resume_job": "resume",
    },
)
