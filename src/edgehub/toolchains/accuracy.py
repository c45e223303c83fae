"""Comparing a compiled model's outputs with the original model's, output by output."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class OutputAccuracy:
    name: str
    shape: tuple[int, ...]
    max_abs_error: float
    max_rel_error: float
    cosine_similarity: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_outputs(
    compiled: dict[str, np.ndarray], reference: dict[str, np.ndarray]
) -> list[OutputAccuracy]:
    """Max abs / max rel error and cosine similarity per output present in both.

    Relative error divides by ``max(|reference|, eps)`` where eps is 1e-6 of the reference's
    largest magnitude, so exact zeros do not explode it.
    """
    import numpy as np

    rows = []
    for name, ref in reference.items():
        if name not in compiled:
            continue
        a = np.asarray(compiled[name], dtype=np.float64).ravel()
        b = np.asarray(ref, dtype=np.float64).ravel()
        if a.shape != b.shape:
            rows.append(OutputAccuracy(name, tuple(np.shape(ref)), float("inf"), float("inf"), 0.0))
            continue
        diff = np.abs(a - b)
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        eps = max(scale * 1e-6, 1e-12)
        rel = diff / np.maximum(np.abs(b), eps)
        na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
        if na == 0.0 and nb == 0.0:
            cosine = 1.0
        elif na == 0.0 or nb == 0.0:
            cosine = 0.0
        else:
            cosine = float(np.dot(a, b) / (na * nb))
        rows.append(
            OutputAccuracy(
                name=name,
                shape=tuple(int(d) for d in np.shape(ref)),
                max_abs_error=float(diff.max()) if diff.size else 0.0,
                max_rel_error=float(rel.max()) if rel.size else 0.0,
                cosine_similarity=cosine,
            )
        )
    return rows
