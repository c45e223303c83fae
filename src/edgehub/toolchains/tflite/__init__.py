"""The TFLite / LiteRT toolchain: components, and the providers registered on import."""

from edgehub.toolchains.tflite import local  # noqa: F401  (registers the local providers)
