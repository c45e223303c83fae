"""`TFLiteBatchRunner`: a dataset through a ``.tflite`` model in LiteRT (agent ``tflite.batch``),
fed and read in the ONNX model's names and layout through the compiler's mapping sidecar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgehub.toolchains.batch import BatchRunner
from edgehub.toolchains.tflite.components import TFLiteCompiledModel, TFLiteInvoker
from edgehub.toolchains.tflite.local import model_request


class TFLiteBatchRunner(BatchRunner):
    runtime = "tflite"
    command = "tflite.batch"
    component = TFLiteInvoker
    maps_tensors = True

    def model_files(self, model: Any) -> tuple[dict[str, Path], dict[str, Any]]:
        if isinstance(model, Path):
            model = TFLiteCompiledModel.from_path(model)
        return model_request(self.ctx, model, "TFLite eval")
