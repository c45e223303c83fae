"""Importing this module registers the ``qai_hub`` providers of the ONNX Runtime and TFLite
compilers, profilers and invokers (the toolchains announce it with `provider_module`)."""

from edgehub.toolchains.qai_hub import compile, invoke, profile  # noqa: F401  (registers)
