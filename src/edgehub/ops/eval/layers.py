"""Where accuracy breaks: the first layer of a compiled model whose output diverges from the float
reference's, found by bisection over the graph order.

Layers are the reference's nodes in graph (topological) order; a node's tensor is its first
output, found in the compiled model by the runtime's rule: in an ONNX Runtime QDQ model as
``<tensor>_DequantizeLinear_Output`` (the value its consumers see) or under its own name
(`qdq_match`); in a TFLite model through the compiler's mapping of ONNX tensors onto TFLite
tensors (the agent dequantizes them and puts them in the ONNX layout). A layer without a
counterpart was fused or renamed by the compiler and is reported as such, and named in the
``fused`` list of the next matched layer it feeds (a Conv folded into the Relu after it is
judged with that Relu). A layer's error is measured on a few samples: the relative L2 error,
cosine and SNR of the whole tensor, and the worst per-channel relative L2 (channels on axis 1),
which catches channels a per-tensor int8 scale crushes even where one outlier channel dominates
the whole tensor's norm (a channel of negligible energy, under a tenth of the median channel's
norm, is judged against that tenth: its rounding is no divergence). A layer **diverges** when
its worst channel error exceeds the threshold; errors carry forward through the graph, so the
first divergent layer is found by bisection, each probe one extra run of both models with that
layer's tensor (and its producers', to tell how much the layer itself added) marked as outputs:
at most ceil(log2(layers)) + 1 extra runs, never every tensor at once. A TensorRT engine is
built again with the probed tensors marked as outputs; where that changes its fusions, the probe
is listed under ``fusion_changed`` (the tensors and both engines' layer counts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from edgehub.toolchains.metrics import IDENTICAL_DB

if TYPE_CHECKING:
    import numpy as np


# a channel whose reference norm is under this share of the median channel's is judged
# against that share (see `tensor_errors`)
NEGLIGIBLE_CHANNEL = 0.1

# marks: {compiled tensor name: reference tensor name} -> (model arrays, reference arrays)
Probe = Callable[[dict[str, str]], tuple[dict[str, Any], dict[str, Any]]]


@dataclass
class LayerRow:
    """One reference node; ``compiled_tensor`` None: fused or renamed in the compiled model."""

    index: int
    node: str
    op: str
    tensor: str
    compiled_tensor: str | None
    producers: list[int] = field(default_factory=list)
    rel_l2: float | None = None
    channel_rel_l2: float | None = None
    cosine: float | None = None
    snr_db: float | None = None
    growth: float | None = None
    fused: list[str] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return self.channel_rel_l2 is not None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("producers")
        return data


def qdq_match(compiled: Sequence[dict[str, Any]]) -> Callable[[str], str | None]:
    """The compiled tensor of a reference tensor in a QDQ model of nodes ``compiled``
    (``{name, op, inputs, outputs}``): its dequantized value, else itself, else None."""
    made = {name for node in compiled for name in node["outputs"]}

    def match(tensor: str) -> str | None:
        dequantized = f"{tensor}_DequantizeLinear_Output"
        return dequantized if dequantized in made else tensor if tensor in made else None

    return match


def layer_rows(
    reference: Sequence[dict[str, Any]], matcher: Callable[[str], str | None]
) -> list[LayerRow]:
    """The reference's nodes (``{name, op, inputs, outputs}`` in graph order), each with the
    compiled model's tensor ``matcher`` gives for its first output."""
    producer: dict[str, int] = {}
    rows: list[LayerRow] = []
    for node in reference:
        if not node["outputs"]:
            continue
        tensor = node["outputs"][0]
        match = matcher(tensor)
        producers = sorted({producer[n] for n in node["inputs"] if n in producer})
        rows.append(LayerRow(len(rows), node["name"], node["op"], tensor, match, producers))
        for name in node["outputs"]:
            producer[name] = len(rows) - 1
    for row in rows:  # the unmatched layers just before a matched one were folded into it
        if row.compiled_tensor is not None:
            row.fused = _folded(rows, row)
    return rows


def _folded(rows: list[LayerRow], row: LayerRow) -> list[str]:
    found: list[str] = []
    pending = [i for i in row.producers if rows[i].compiled_tensor is None]
    while pending:
        other = rows[pending.pop()]
        if other.node not in found:
            found.insert(0, other.node)
            pending += [i for i in other.producers if rows[i].compiled_tensor is None]
    return found


def tensor_errors(model: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """rel_l2, channel_rel_l2 (worst channel on axis 1 of each sample), cosine, snr_db of a
    tensor stacked over samples."""
    import numpy as np

    a = model.astype(np.float64)
    b = reference.astype(np.float64)
    if a.shape != b.shape:
        return {"rel_l2": float("nan"), "channel_rel_l2": float("inf"), "cosine": 0.0}
    diff, base = np.linalg.norm(a - b), np.linalg.norm(b)
    tiny = np.finfo(np.float64).tiny
    rel = float(diff / max(base, tiny)) if diff else 0.0
    norm = float(np.linalg.norm(a) * base)
    cosine = float(np.sum(a * b) / norm) if norm else (1.0 if diff == 0 else 0.0)
    worst = rel
    if a.ndim >= 3 and a.shape[2] > 1:  # samples, batch, channels, ...
        channels_a = np.moveaxis(a, 2, 0).reshape(a.shape[2], -1)
        channels_b = np.moveaxis(b, 2, 0).reshape(b.shape[2], -1)
        errors = np.linalg.norm(channels_a - channels_b, axis=1)
        bases = np.linalg.norm(channels_b, axis=1)
        # a channel of negligible energy is judged against the tensor's scale: its own norm,
        # but never less than a tenth of the median channel's (a near-zero channel's few
        # units of rounding are no divergence; the median, not the mean, so one outlier
        # channel does not excuse the ordinary channels its scale crushes)
        floor = NEGLIGIBLE_CHANNEL * float(np.median(bases))
        per = np.where(errors == 0, 0.0, errors / np.maximum(np.maximum(bases, floor), tiny))
        worst = float(per.max())
    noise = float(np.mean((a - b) ** 2))
    power = float(np.mean(b**2))
    snr = IDENTICAL_DB if noise == 0 else (10 * np.log10(power / noise) if power else -IDENTICAL_DB)
    return {"rel_l2": rel, "channel_rel_l2": worst, "cosine": cosine, "snr_db": float(snr)}


class LayerSearch:
    """Bisects ``rows`` for the first divergent layer with ``probe`` (one extra run of both
    models per call)."""

    def __init__(self, rows: list[LayerRow], threshold: float, probe: Probe) -> None:
        self.rows = rows
        self.threshold = threshold
        self.probe = probe
        self.runs = 0
        self.unfused: list[dict[str, Any]] = []  # probes whose marks changed the fusions

    def _measure(self, row: LayerRow) -> bool:
        """Whether ``row`` diverges, running a probe unless it was measured already."""
        if not row.measured:
            wanted = [row, *(self.rows[i] for i in row.producers)]
            marks = {r.compiled_tensor: r.tensor for r in wanted if r.compiled_tensor}
            model, reference = self.probe(marks)
            self.runs += 1
            for r in wanted:
                if r.compiled_tensor and not r.measured:
                    errors = tensor_errors(model[r.compiled_tensor], reference[r.tensor])
                    for name in ("rel_l2", "channel_rel_l2", "cosine", "snr_db"):
                        setattr(r, name, errors.get(name))
        before = [self.rows[i].channel_rel_l2 for i in row.producers]
        known = [v for v in before if v is not None]
        assert row.channel_rel_l2 is not None
        row.growth = row.channel_rel_l2 - (max(known) if known else 0.0)
        return row.channel_rel_l2 > self.threshold

    def first_divergent(self) -> LayerRow | None:
        candidates = [r for r in self.rows if r.compiled_tensor is not None]
        if not candidates or not self._measure(candidates[-1]):
            return None
        low, high = 0, len(candidates) - 1
        while low < high:
            middle = (low + high) // 2
            if self._measure(candidates[middle]):
                high = middle
            else:
                low = middle + 1
        return candidates[low]

    def to_dict(self, first: LayerRow | None, samples: int) -> dict[str, Any]:
        extra = {"fusion_changed": self.unfused} if self.unfused else {}
        return {
            **extra,
            "threshold": self.threshold,
            "samples": samples,
            "layers": len(self.rows),
            "runs": self.runs,
            "first_divergent": None if first is None else first.to_dict(),
            "measured": [r.to_dict() for r in self.rows if r.measured],
            "fused_or_renamed": [
                {"node": r.node, "op": r.op, "tensor": r.tensor}
                for r in self.rows
                if r.compiled_tensor is None
            ],
        }
