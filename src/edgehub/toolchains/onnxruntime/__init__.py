"""The ONNX Runtime toolchain: components, and the providers registered on import."""

from edgehub.toolchains.onnxruntime import local  # noqa: F401  (registers the local providers)
