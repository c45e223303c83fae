"""The ``ssh`` providers of the TFLite profiler and invoker: the ``local`` providers' own bodies,
whose `device_agent` is then the device's (compiling stays on this host)."""

from __future__ import annotations

from edgehub.toolchains.tflite import local
from edgehub.toolchains.tflite.components import TFLiteInvoker, TFLiteProfiler

__all__: list[str] = []

SSH = "ssh"  # a plain provider type string: the seeds fix ProviderType's members

TFLiteProfiler.provider(SSH)(local._profile_local)
TFLiteInvoker.provider(SSH)(local._invoke_local)
