"""What a corpus model is: its catalog entry (`Spec`) and what its maker returns (`Built`).

A family module declares each model with `@model(...)` on a maker; `CATALOG` holds them all in
declaration order. Makers import torch and friends themselves, so reading the catalog costs
nothing but the family modules' imports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FAMILIES = (
    "classification",
    "detection",
    "segmentation",
    "ocr",
    "keypoints",
    "audio",
    "text",
    "tabular",
)
EXPORTERS = ("torch.onnx", "torch.onnx.dynamo")
FEATURES = (
    "dynamic_batch",
    "dynamic_spatial",
    "dynamic_length",
    "unnamed_dims",
    "symbolic_output",
    "int64_input",
    "bool_input",
    "multi_input",
    "multi_output",
    "state_input",
    "rnn",
    "attention",
)


@dataclass
class Built:
    """A model ready to export and the samples it is checked and evaluated on.

    ``samples``: one dict per sample (input name -> array at the model's fixed input shape),
    in the model's input order. ``batch_axis``: per input, the axis its samples stack on in
    a batch (0 by default; 1 for an RNN state shaped [layers, batch, hidden]; None for an
    input every sample shares, such as a sample rate). ``dynamic``: the dynamic axes of inputs
    and outputs, in `torch.onnx.export`'s ``dynamic_axes`` form. ``postprocess``: a change to
    the exported ONNX model (as a user's export script would make) before it is saved.
    """

    model: Any
    samples: list[dict[str, Any]]
    outputs: list[str]
    dynamic: dict[str, dict[int, str]] = field(default_factory=dict)
    batch_axis: dict[str, int | None] = field(default_factory=dict)
    output_batch_axis: dict[str, int] = field(default_factory=dict)
    postprocess: Callable[[Any], None] | None = None
    tolerance: float = 1e-3


@dataclass(frozen=True)
class Spec:
    name: str
    family: str
    source: str
    exporter: str
    features: tuple[str, ...]
    make: Callable[[], Built]
    opset: int = 17

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "exporter": self.exporter,
            "source": self.source,
            "features": list(self.features),
            "opset": self.opset,
        }


CATALOG: list[Spec] = []


def model(
    name: str,
    family: str,
    source: str,
    features: tuple[str, ...] | list[str],
    dynamo: bool = False,
    opset: int | None = None,
) -> Callable[[Callable[[], Built]], Callable[[], Built]]:
    """Declare the decorated maker as corpus model ``name``."""
    if family not in FAMILIES:
        raise ValueError(f"{name}: unknown family {family!r}")
    unknown = set(features) - set(FEATURES)
    if unknown:
        raise ValueError(f"{name}: unknown features {sorted(unknown)}")
    if any(spec.name == name for spec in CATALOG):
        raise ValueError(f"{name}: declared twice")

    def declare(make: Callable[[], Built]) -> Callable[[], Built]:
        CATALOG.append(
            Spec(
                name=name,
                family=family,
                source=source,
                exporter="torch.onnx.dynamo" if dynamo else "torch.onnx",
                features=tuple(features),
                make=make,
                opset=opset or (18 if dynamo else 17),
            )
        )
        return make

    return declare
