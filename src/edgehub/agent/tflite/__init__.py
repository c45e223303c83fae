"""The TFLite / LiteRT commands of the agent, run in the tflite image (onnx2tf and TensorFlow to
compile, the LiteRT interpreter to run, onnx and onnxruntime for the ONNX side). Compiling
records how the ONNX names and layouts map to the TFLite ones in a sidecar (:mod:`.layout`),
which the other commands read where it exists."""

from __future__ import annotations

# What a resident agent server of the tflite image imports up front. TensorFlow and onnx2tf are
# left out on purpose: only compiling needs them, and they cost seconds and hundreds of MB.
COMMANDS = ("inspect", "compile", "profile", "invoke", "batch", "ab")
PRELOAD = ("numpy", "ai_edge_litert.interpreter")
