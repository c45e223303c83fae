"""The ``ssh`` providers of the ONNX Runtime components: the ``local`` providers' own bodies,
whose `device_agent` is then the device's."""

from __future__ import annotations

from edgehub.toolchains.onnxruntime import local
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeCompiler,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)

__all__: list[str] = []

SSH = "ssh"  # a plain provider type string: the seeds fix ProviderType's members

ONNXRuntimeCompiler.provider(SSH)(local._compile_local)
ONNXRuntimeProfiler.provider(SSH)(local._profile_local)
ONNXRuntimeInvoker.provider(SSH)(local._invoke_local)
