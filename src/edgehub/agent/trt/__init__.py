"""TensorRT commands of the agent (``trt.*``): build engines with TensorRT for RTX (no GPU needed)
or full TensorRT, profile / invoke them with trtexec, and, on the GPU through the TensorRT
bindings, run them over datasets (``batch``) and compare two in alternating blocks (``ab``)."""

COMMANDS = ("build", "inspect", "gpu", "profile", "invoke", "batch", "ab")

# What a resident agent server of the tensorrt-rtx image imports up front. The full-TensorRT
# image has the module `tensorrt` instead; `runtime.import_tensorrt` finds either.
PRELOAD = ("numpy", "onnx", "tensorrt_rtx_bindings")
