"""TensorRT commands of the agent (``trt.*``): build engines with TensorRT for RTX (no GPU needed)
or full TensorRT, profile / invoke them with trtexec where a GPU is present, and compare two
in alternating blocks (``trt.ab``, with the TensorRT bindings on the GPU)."""

COMMANDS = ("build", "inspect", "gpu", "profile", "invoke", "ab")

# What a resident agent server of the tensorrt-rtx image imports up front. The full-TensorRT
# image has the module `tensorrt` instead; `runtime.import_tensorrt` finds either.
PRELOAD = ("numpy", "onnx", "tensorrt_rtx_bindings")
