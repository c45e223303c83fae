"""Qualcomm AI Hub (``qai_hub`` devices): providers of the ONNX Runtime and TFLite compilers,
profilers and invokers, registered when this package is imported.

``qai_hub`` itself is imported only when such a device is used (`client.load_qai_hub`).
The public helpers: `QAIHubConfig` (the provider's settings), `check_qai_hub` (token and
client version, offline), `resume_job` (attach to a submitted job) and `run_on_devices`
(fan one call out to several devices).
"""

from edgehub.toolchains.qai_hub import compile, invoke, profile  # noqa: F401  (registers)
from edgehub.toolchains.qai_hub.client import QAIHubCheck, check_qai_hub
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.qai_hub.fanout import FanOutError, run_on_devices
from edgehub.toolchains.qai_hub.resume import resume_job

__all__ = [
    "PROVIDER_CONFIGS",
    "FanOutError",
    "QAIHubCheck",
    "QAIHubConfig",
    "check_qai_hub",
    "resume_job",
    "run_on_devices",
]

PROVIDER_CONFIGS = (QAIHubConfig,)
