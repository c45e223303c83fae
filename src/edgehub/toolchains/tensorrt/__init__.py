"""The TensorRT toolchain: components, and the providers registered on import."""

from edgehub.toolchains.tensorrt import local  # noqa: F401  (registers the local providers)
