"""The tflite toolchain."""
