"""A copy of an ONNX model with its dynamic input dims fixed, for device tools that take only
static shapes (the ``embedl-onnxruntime`` CLI).

The copy is made without the ``onnx`` package (:mod:`.onnx_wire`) and kept under the store's
``cache/static_models/``, keyed by the model's content and the shapes, with its sha256 beside it:
a later run reuses it while it still hashes to that.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.agent.shapes import example_shapes as agent_example_shapes
from edgehub.agent.tensors import TensorSpec, is_named_dim, normalize_dim
from edgehub.errors import ModelError, UsageError
from edgehub.toolchains.onnx_wire import Dim, GraphInput, read_inputs, write_fixed
from edgehub.toolchains.remote.device_tool import device_file_name

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


_DIGEST = "sha256"  # beside a cached copy: the sha256 of its bytes when it was made


def shown_dims(dims: Sequence[Dim] | None) -> str:
    """``dims`` as shown in messages: ``[-1, 3, '?', '?']``."""
    if dims is None:
        return "no declared shape"
    shown = (str(d) if isinstance(d, int) and d > 0 else repr(d or "?") for d in dims)
    return f"[{', '.join(shown)}]"


def example_shapes(inputs: Sequence[GraphInput]) -> str:
    """``input_shape`` text for ``inputs``, sized as the agent's examples are
    (`edgehub.agent.shapes.example_shapes`)."""
    specs = [
        TensorSpec(
            entry.name,
            "float32",
            None if entry.dims is None else [normalize_dim(d) for d in entry.dims],
        )
        for entry in inputs
    ]
    return ",".join(
        f"{entry.name}:{'x'.join(map(str, shape))}"
        for entry, shape in zip(inputs, agent_example_shapes(specs), strict=True)
    )


def _requested(
    inputs: Sequence[GraphInput], input_shape: Any, what: str
) -> dict[str, tuple[int, ...]]:
    if input_shape is None:
        return {}
    if isinstance(input_shape, Mapping):
        known = {entry.name for entry in inputs}
        unknown = sorted(set(map(str, input_shape)) - known)
        if unknown:
            raise UsageError(
                f"{what} names unknown input {unknown[0]!r}; model inputs: "
                f"{', '.join(sorted(known))} (for example input_shape={example_shapes(inputs)})"
            )
        return {str(k): tuple(int(d) for d in v) for k, v in input_shape.items()}
    if not inputs:
        raise UsageError("input_shape given but the model has no inputs")
    return {inputs[0].name: tuple(int(d) for d in input_shape)}


def _tied(
    dims: Sequence[Dim] | None, symbols: dict[str, tuple[int, str]]
) -> tuple[int, ...] | None:
    """``dims`` with named symbols set from another input's shape; ``None`` if one stays open."""
    if dims is None:
        return None
    sizes = []
    for dim in dims:
        if isinstance(dim, int) and dim > 0:
            sizes.append(dim)
        elif isinstance(dim, str) and dim in symbols:
            sizes.append(symbols[dim][0])
        else:
            return None
    return tuple(sizes)


def _resolve(
    inputs: Sequence[GraphInput], requested: dict[str, tuple[int, ...]], tool: str, model: Path
) -> dict[str, tuple[int, ...]]:
    """The static shape of every dynamic input (named symbols carry over between inputs)."""
    symbols: dict[str, tuple[int, str]] = {}
    for entry in inputs:
        shape = requested.get(entry.name)
        if shape is None or entry.dims is None:
            continue
        if len(shape) != len(entry.dims):
            raise UsageError(
                f"input_shape for {entry.name!r} has {len(shape)} dims but the input has "
                f"{len(entry.dims)} {shown_dims(entry.dims)}"
            )
        for axis, (dim, size) in enumerate(zip(entry.dims, shape, strict=True)):
            if isinstance(dim, int) and dim > 0 and dim != size:
                raise UsageError(
                    f"input_shape for {entry.name!r} sets dim {axis} to {size} but the model "
                    f"fixes it at {dim}"
                )
            if isinstance(dim, str) and is_named_dim(dim):
                where = f"{entry.name} dim {axis}"
                known = symbols.setdefault(dim, (size, where))
                if known[0] != size:
                    raise UsageError(
                        f"input_shape gives dimension {dim!r} two values: {known[0]} ({known[1]}) "
                        f"and {size} ({where}); inputs sharing a named dimension must agree"
                    )
    shapes: dict[str, tuple[int, ...]] = {}
    for entry in inputs:
        if not entry.dynamic:
            continue
        shape = requested.get(entry.name) or _tied(entry.dims, symbols)
        if shape is None:
            raise ModelError(
                f"input {entry.name!r} of {model.name} is dynamic {shown_dims(entry.dims)} and "
                f"{tool} takes static shapes only: give its shape, for example "
                f"--set input_shape={example_shapes(inputs)}"
            )
        shapes[entry.name] = shape
    return shapes


def static_model(
    ctx: HubContext, model: Path, input_shape: Any = None, *, tool: str, what: str = "input_shape"
) -> Path:
    """``model`` itself when its inputs are static, else its cached copy with the dynamic dims
    fixed to ``input_shape`` (a shape for the first input, or input name → shape; ``what``
    names where the shapes came from in messages)."""
    inputs = read_inputs(model)
    if not any(entry.dynamic for entry in inputs):
        return model
    shapes = _resolve(inputs, _requested(inputs, input_shape, what), tool, model)
    from edgehub.tracking.artifacts import content_hash

    key = hashlib.sha256(
        json.dumps([content_hash(model, verify=True), sorted(shapes.items())]).encode()
    ).hexdigest()[:24]
    folder = ctx.project_dir / "cache" / "static_models" / key
    target = folder / device_file_name(model.name, "model.onnx")
    if not _holds(target, folder / _DIGEST):
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".part")
        os.close(handle)
        try:
            write_fixed(model, Path(temporary), shapes)
            _record(folder / _DIGEST, Path(temporary))
            os.replace(temporary, target)
        finally:
            Path(temporary).unlink(missing_ok=True)
    ctx.client.log_param("static_input_shapes", {k: list(v) for k, v in shapes.items()})
    ctx.events.info(
        f"{tool} takes static shapes: running a copy of {model.name} with "
        + ", ".join(f"{k}={'x'.join(map(str, v))}" for k, v in shapes.items())
    )
    return target


def _holds(target: Path, digest: Path) -> bool:
    """Whether the cached copy ``target`` is a regular file whose bytes hash to the sha256
    recorded in ``digest`` when it was made."""
    from edgehub.tracking.artifacts import hash_path

    if target.is_symlink() or not target.is_file() or digest.is_symlink():
        return False
    try:
        return digest.read_text(encoding="ascii").strip() == hash_path(target)
    except (OSError, UnicodeDecodeError):
        return False


def _record(digest: Path, made: Path) -> None:
    """Write the sha256 of the copy ``made`` to ``digest`` (through a rename)."""
    from edgehub.fsutil import atomic_write
    from edgehub.tracking.artifacts import hash_path

    atomic_write(digest, (hash_path(made) + "\n").encode(), durable=False)
