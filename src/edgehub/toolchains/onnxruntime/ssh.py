"""The ``ssh`` providers of the ONNX Runtime components: the ``local`` providers' own bodies,
with edgehub's agent run by the device's Python and onnxruntime over SSH instead of in the
pinned container (`edgehub.toolchains.remote.select.device_agent` picks it)."""

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
