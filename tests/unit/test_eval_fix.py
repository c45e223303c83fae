"""`fix.propose`: which nodes the repair keeps in float next, on layer rows as `layers` makes
them (the quantizer folds each Conv into the Relu after it)."""

from __future__ import annotations

from edgehub.ops.eval.fix import propose
from edgehub.ops.eval.layers import LayerRow, layer_rows, qdq_match


def _chain(compiled: set[str]) -> list[LayerRow]:
    """conv1 relu1 conv2 relu2 conv3: a chain; ``compiled`` the tensors the QDQ model has."""
    names = ["conv1", "relu1", "conv2", "relu2", "conv3"]
    reference = [
        {"name": n, "op": n[:-1].title(), "inputs": [f"t{i}"], "outputs": [f"t{i + 1}"]}
        for i, n in enumerate(names)
    ]
    made = [{"outputs": [f"{t}_DequantizeLinear_Output"]} for t in sorted(compiled)]
    return layer_rows(reference, qdq_match(made))


def test_the_first_divergent_layer_with_what_was_fused_into_it() -> None:
    rows = _chain({"t2", "t4", "t5"})  # conv1 -> relu1 and conv2 -> relu2 folded
    assert rows[3].fused == ["conv2"]
    assert propose(rows, rows[3], []) == ["conv2", "relu2"]
    assert propose(rows, rows[3], ["conv2"]) == ["relu2"]


def test_a_kept_layer_still_diverging_gives_the_layers_it_feeds() -> None:
    rows = _chain({"t2", "t4", "t5"})
    # relu1 is float but its output is quantized for conv2: keep conv2's layer (conv2 + relu2)
    assert propose(rows, rows[1], ["conv1", "relu1"]) == ["conv2", "relu2"]
    # through layers kept already, to the nearest that is not
    assert propose(rows, rows[1], ["conv1", "relu1", "conv2", "relu2"]) == ["conv3"]
    assert propose(rows, rows[4], ["conv3"]) == []  # nothing after the last layer
