"""`ops.layer_nodes`: engine layer names mapped back onto a graph's ONNX nodes."""

from __future__ import annotations

from edgehub.ops.layer_nodes import GraphNodes

# conv1 -> relu1 -> pool -> conv2 (its output read twice) -> relu2, add
GRAPH = GraphNodes(
    names=["conv1", "relu1", "pool", "conv2", "relu2", "add"],
    ops=["Conv", "Relu", "MaxPool", "Conv", "Relu", "Add"],
    inputs=[["x", "w1"], ["c1"], ["r1"], ["p", "w2"], ["c2"], ["c2", "r2"]],
    outputs=[["c1"], ["r1"], ["p"], ["c2"], ["r2"], ["y"]],
)


def test_a_node_name_with_optimizer_suffixes_maps_to_the_node() -> None:
    for layer in ("pool", "pool_nchwc", "pool_fused", "pool_nchwc_token_3", "fused pool"):
        found = GRAPH.group(layer, "MaxPool")
        assert (found.label, found.position, found.mapped) == ("pool", 2, True), layer


def test_a_tensor_name_maps_to_its_writer_and_a_fused_op_groups_upstream() -> None:
    assert GRAPH.group("r1_nchwc", "Conv").label == "conv1+relu1"  # Conv+Relu fused
    assert GRAPH.group("r1", "Relu").label == "relu1"  # the same op: the node alone
    # conv2's output is read twice: relu2 cannot have absorbed it
    assert GRAPH.group("r2_nchwc", "Conv").label == "relu2"


def test_tensorrt_style_joined_names_group_their_nodes() -> None:
    assert GRAPH.group("conv1 + relu1", "CaskConvolution").label == "conv1+relu1"


def test_a_name_found_nowhere_is_kept_and_marked_unmapped() -> None:
    found = GRAPH.group("ReorderOutput_token_5", "ReorderOutput")
    assert (found.label, found.mapped) == ("ReorderOutput_token_5 (unmapped)", False)
    assert found.position > len(GRAPH.names)
