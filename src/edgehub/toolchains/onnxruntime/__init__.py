"""The onnxruntime toolchain."""
