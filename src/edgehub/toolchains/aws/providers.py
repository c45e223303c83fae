"""Importing this module registers the ``aws`` provider of `TFLiteProfiler` (the TFLite
toolchain announces it with `provider_module`)."""

from edgehub.toolchains.aws import profile  # noqa: F401  (registers)
