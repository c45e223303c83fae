"""TensorRT commands of the agent (``trt.*``): build engines with TensorRT for RTX (no GPU needed)
or full TensorRT, profile / invoke them with trtexec and run them over datasets (``batch``)
where a GPU is present."""

COMMANDS = ("build", "inspect", "gpu", "profile", "invoke", "batch")

# What a resident agent server of the tensorrt-rtx image imports up front. The full-TensorRT
# image has the module `tensorrt` instead; `runtime.import_tensorrt` finds either.
PRELOAD = ("numpy", "onnx", "tensorrt_rtx_bindings")
