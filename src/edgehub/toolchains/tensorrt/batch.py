"""`TRTBatchRunner`: a dataset through a TensorRT engine (agent ``trt.batch``) on this host's
NVIDIA GPU, in the tensorrt-rtx image that built it. Each run also gets the ONNX model the engine
was built from and the compile's precision and shapes, which the layer search needs to build
the engine again with intermediate tensors marked as outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.toolchains.agent_call import AgentCall
from edgehub.toolchains.batch import BatchRunner
from edgehub.toolchains.host_gpu import require_host_gpu
from edgehub.toolchains.local_session import CONTAINER_WORK
from edgehub.toolchains.tensorrt.components import TensorRTInvoker
from edgehub.toolchains.tensorrt.gpu import RTX_IMAGE, detect_gpu

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.tracking.run_log import RunLog


BUILD_PARAMS = ("precision", "shapes")  # shapes: the profile the build resolved


def build_settings(log: RunLog | None) -> dict[str, Any]:
    """The compile's precision and shapes, as its run recorded them."""
    params = log.params if log is not None else {}
    found = {key: params[key].value for key in BUILD_PARAMS if key in params}
    found.setdefault("precision", "fp32")
    return found


class TRTBatchRunner(BatchRunner):
    runtime = "tensorrt"
    command = "trt.batch"
    component = TensorRTInvoker

    def __init__(self, ctx: HubContext, device: str | None, scratch: str | None = None) -> None:
        from edgehub import images

        provider = ctx.device(device or "local").provider_type
        if provider != "local":
            raise UsageError(
                f"TensorRT eval runs on this host's GPU (a local device); device {device!r} "
                f"uses {provider!r}"
            )
        require_host_gpu(
            "TensorRT eval runs the TensorRT engine",
            "Run it on a host with a GPU (and the NVIDIA Container Toolkit), or evaluate the "
            "onnxruntime or tflite compilation here",
        )
        self.ctx = ctx
        image = ctx.image_tags.get(RTX_IMAGE) or images.require_image(RTX_IMAGE).tag
        runner = ctx.docker_runner(image, gpus="all")
        ctx.client.log_environment({"image": image, "runtime": self.runtime,
                                    "gpu": detect_gpu().describe()})  # fmt: skip
        local = ctx.artifact_dir / scratch if scratch is not None else ctx.artifact_dir
        self._agent = AgentCall(runner, CONTAINER_WORK / ctx.artifact_dir.name, local)

    def model_files(self, model: Any) -> tuple[dict[str, Path], dict[str, Any]]:
        return engine_request(self.ctx, model)


def engine_request(ctx: HubContext, model: Any) -> tuple[dict[str, Path], dict[str, Any]]:
    """The files of a run of ``model`` (an engine path, or a compiled model whose compile run
    kept the ONNX model it was built from) and the run's fields naming them."""
    if isinstance(model, Path):
        return {model.name: model}, {"model": f"in/{model.name}"}
    engine = Path(model.path.to_local(ctx).local())
    files = {engine.name: engine}
    fields: dict[str, Any] = {"model": f"in/{engine.name}"}
    log = model.run_log
    kept = None
    if log is not None:
        kept = log.artifacts.get("qdq_model") or log.artifacts.get("input")
    elif model.input is not None:
        kept = model.input
    if kept is not None:
        source = Path(kept.to_local(ctx).local())
        name = f"source-{source.name}" if source.name == engine.name else source.name
        files[name] = source
        fields.update(source=f"in/{name}", build=build_settings(log))
    return files, fields
