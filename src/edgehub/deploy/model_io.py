"""Loading and saving the models patterns work on (``onnx.ModelProto`` or a path)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Union

from edgehub.errors import ModelError

if TYPE_CHECKING:
    import onnx

ModelLike = Union["onnx.ModelProto", str, Path]


def load_model(model: ModelLike) -> onnx.ModelProto:
    """A private copy of ``model`` (the caller's proto is never changed)."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    path = Path(model)
    if not path.is_file():
        raise ModelError(f"model {path} does not exist; pass an .onnx file or an onnx.ModelProto")
    try:
        return onnx.load(str(path))
    except Exception as exc:  # protobuf raises several types for a file that is not ONNX
        raise ModelError(f"{path} is not an ONNX model ({exc.__class__.__name__})") from exc


def save_model(model: onnx.ModelProto, path: str | Path) -> Path:
    """Write ``model`` to ``path`` (parent directories are created)."""
    import onnx

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target))
    return target
