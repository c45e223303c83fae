"""The tensorrt toolchain."""
