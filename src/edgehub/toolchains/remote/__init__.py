"""What the providers that run tools on a device over a runner share (``embedl_onnxruntime``,
``trtexec``): the device and its config, content-addressed model uploads, the run's remote
directory, and one-command tool calls (`device_tool`)."""
