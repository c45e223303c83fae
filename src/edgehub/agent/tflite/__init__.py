"""The TFLite / LiteRT commands of the agent: ``tflite.inspect``, ``tflite.compile``,
``tflite.profile``, ``tflite.invoke``, ``tflite.batch``, ``tflite.ab``.

They run in the tflite image (onnx2tf + TensorFlow for compiling, the LiteRT interpreter for
running, onnx + onnxruntime for the ONNX side). Compiling records how the ONNX model's tensor
names and layouts (NCHW) map to the TFLite ones (NHWC) in a JSON sidecar (:mod:`.layout`); the
invoker and profiler read it, and work without it on any ``.tflite``.
"""

from __future__ import annotations

# What a resident agent server of the tflite image imports up front. TensorFlow and onnx2tf are
# left out on purpose: only compiling needs them, and they cost seconds and hundreds of MB.
COMMANDS = ("inspect", "compile", "profile", "invoke", "batch", "ab")
PRELOAD = ("numpy", "ai_edge_litert.interpreter")
