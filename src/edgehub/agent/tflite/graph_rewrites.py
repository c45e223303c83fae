"""ONNX rewrites for patterns onnx2tf mis-converts, applied before (or between) its own steps.

- A 0-d float constant operand of a broadcasting binary op (``q * 32**-0.25``) becomes a
  1-element tensor (`scalars_as_vectors`): onnx2tf's accuracy check turns a 0-d constant into a
  Python number and fails to build a Keras model on it ("Output tensors of a Functional model
  must be the output of a TensorFlow Layer").
- A constant of rank >= 3 with leading 1s beside a tensor onnx2tf holds in ONNX's axis order (a
  detector's anchors after a Reshape) loses those 1s (`constants_below_rank3`, on onnxsim's
  output): onnx2tf would make it channels-last and transpose the other operand to match.
- LSTM zero states (`zero_states_at_run_time`) and softmax expectations (`expectations_as_conv`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..models import constant_tensors, drop_unused, inferred_dims, replace_items

_BROADCASTING = ("Add", "Sub", "Mul", "Div", "Pow")


def _ranks(model: Any) -> dict[str, int]:
    """The rank of every tensor shape inference knows it of (empty if inference fails)."""
    found = inferred_dims(model)
    if found is None:
        return {}
    ranks = {t.name: len(t.dims) for t in model.graph.initializer}
    ranks.update({name: len(dims) for name, dims in found.items()})
    ranks.update({name: len(t.dims) for name, t in constant_tensors(model.graph).items()})
    return ranks


def add_initializer(model: Any, array: np.ndarray, name: str) -> str:
    """Add ``array`` as an initializer named ``name`` (also a graph input before IR 4)."""
    from onnx import helper, numpy_helper

    tensor = numpy_helper.from_array(array, name)
    model.graph.initializer.append(tensor)
    if model.ir_version < 4:  # initializers must be graph inputs too before IR 4
        model.graph.input.append(
            helper.make_tensor_value_info(name, tensor.data_type, list(array.shape))
        )
    return name


def _constant_operands(
    model: Any,
    suffix: str,
    rule: Callable[[Any, str, dict[str, Any], Callable[[], dict[str, int]]], Any],
) -> list[str]:
    """Give each broadcasting binary node (`_BROADCASTING`) the value ``rule(constant, other
    operand, constants, ranks)`` gives one of its constant operands (None: kept), as the
    initializer ``<constant>_<suffix>``; returns the nodes changed. ``ranks()`` infers the
    model's ranks once, where a rule asks."""
    graph = model.graph
    constants = constant_tensors(graph)
    inferred: list[dict[str, int]] = []

    def ranks() -> dict[str, int]:
        if not inferred:
            inferred.append(_ranks(model))
        return inferred[0]

    made: dict[str, str] = {}
    changed = []
    for node in graph.node:
        if node.op_type not in _BROADCASTING or node.domain not in ("", "ai.onnx"):
            continue
        if len(node.input) != 2:
            continue
        for index, name in enumerate(node.input):
            tensor = constants.get(name)
            value = (
                None if tensor is None else rule(tensor, node.input[1 - index], constants, ranks)
            )
            if value is None:
                continue
            if name not in made:
                made[name] = add_initializer(model, value, f"{name}_{suffix}")
                constants[made[name]] = graph.initializer[-1]
            node.input[index] = made[name]
            changed.append(node.name or node.output[0])
    if made:
        drop_unused(model, set(made))
    return changed


def scalars_as_vectors(model: Any) -> list[str]:
    """Give each broadcasting binary node (`_BROADCASTING`) whose operand is a 0-d float
    constant, and whose other operand has rank >= 1, that constant as a 1-element tensor;
    returns the nodes changed."""
    from onnx import numpy_helper

    def vector(tensor: Any, other: str, constants: Any, ranks: Callable[[], Any]) -> Any:
        if len(tensor.dims) != 0:
            return None
        value = numpy_helper.to_array(tensor)
        if value.dtype.kind != "f" or ranks().get(other, 0) < 1:
            return None  # a scalar op (or one of unknown rank): its output must stay 0-d
        return value.reshape(1)

    return _constant_operands(model, "vector", vector)


# ops that read an input's axis 1 as channels: an input they read is laid out channels-first
_CHANNEL_OPS = {
    "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool",
    "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool", "MaxRoiPool", "RoiAlign",
    "BatchNormalization", "InstanceNormalization", "GroupNormalization", "LRN", "Resize",
    "Upsample", "DepthToSpace", "SpaceToDepth", "GridSample", "MaxUnpool",
}  # fmt: skip


def layout_free_inputs(model: Any) -> list[str]:
    """The graph inputs of rank 3-5 (those onnx2tf makes channels-last) that no channel-wise
    op (`_CHANNEL_OPS`) reads directly: RNN states, token or frame sequences. Their axes carry
    no channels, and onnx2tf's transpose of them can mislead the ops that read them."""
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    found = []
    for value in graph.input:
        if value.name in initializers or not value.type.tensor_type.HasField("shape"):
            continue
        rank = len(value.type.tensor_type.shape.dim)
        ops = readers.get(value.name, set())
        if 3 <= rank <= 5 and ops and not ops & _CHANNEL_OPS:
            found.append(value.name)
    return found


def zero_states_at_run_time(model: Any) -> list[str]:
    """Give each LSTM whose initial state is absent or all zeros a zero state computed from
    its input (its first step times a zero matrix: exactly zero, and nothing folds it away);
    returns the nodes changed. onnx2tf's LSTM fails without an initial state, and onnxsim, which
    it runs first, drops a constant zero one."""
    from onnx import helper

    graph = model.graph
    constants = constant_tensors(graph)
    producers = {out: node for node in graph.node for out in node.output}
    nodes = list(graph.node)
    changed = []
    for node in [n for n in graph.node if n.op_type == "LSTM" and n.domain in ("", "ai.onnx")]:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        weights = constants.get(node.input[1]) if len(node.input) > 1 else None
        if weights is None:
            continue
        directions, _, size = (int(d) for d in weights.dims)
        hidden = int(attrs.get("hidden_size", 0))
        layout = int(attrs.get("layout", 0))
        states = [node.input[i] if len(node.input) > i else "" for i in (5, 6)]
        if not hidden or not all(_is_zero(s, constants, producers) for s in states):
            continue
        name = node.name or node.output[0]
        # the first step of X ([seq, batch, in]; layout 1: [batch, seq, in]) once per direction
        step_axis = layout
        bounds = [
            add_initializer(model, np.array([v], dtype=np.int64), f"{name}_zero_state_{key}")
            for key, v in (("start", 0), ("end", 1), ("axis", step_axis))
        ]
        matrix = add_initializer(
            model, np.zeros((size, hidden), dtype=np.float32), f"{name}_zero_state_matrix"
        )
        first, steps, zero = (f"{name}_zero_state_{k}" for k in ("step", "steps", "value"))
        made = [helper.make_node("Slice", [node.input[0], *bounds], [first], name=first)]
        if directions > 1:
            made.append(
                helper.make_node("Concat", [first] * directions, [steps], name=steps, axis=layout)
            )
        else:
            steps = first
        made.append(helper.make_node("MatMul", [steps, matrix], [zero], name=zero))
        inputs = list(node.input) + [""] * (7 - len(node.input))
        inputs[5] = inputs[6] = zero
        replace_items(node.input, inputs)
        where = nodes.index(node)
        nodes[where:where] = made
        changed.append(name)
    if changed:
        replace_items(graph.node, nodes)
    return changed


# ops that pass their first input's values on (reshaped, sliced, repeated, cast)
_VALUE_KEEPING = {"Slice", "Reshape", "Unsqueeze", "Squeeze", "Expand", "Cast", "Identity",
                  "Transpose", "Tile", "Gather", "Flatten"}  # fmt: skip


def _is_zero(tensor: str, constants: dict[str, Any], producers: dict[str, Any]) -> bool:
    """Whether ``tensor`` is absent or all zeros whatever the inputs: a zero constant, a
    ConstantOfShape of zero, or those through ops that keep values (`_VALUE_KEEPING`)."""
    from onnx import numpy_helper

    for _ in range(32):
        if not tensor:
            return True
        if tensor in constants:
            return not np.any(numpy_helper.to_array(constants[tensor]))
        node = producers.get(tensor)
        if node is None:
            return False
        if node.op_type == "ConstantOfShape":
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            return value is None or not np.any(numpy_helper.to_array(value))
        if node.op_type == "Concat":
            return all(_is_zero(part, constants, producers) for part in node.input)
        if node.op_type not in _VALUE_KEEPING:
            return False
        tensor = node.input[0]
    return False


def expectations_as_conv(model: Any) -> list[str]:
    """Rewrite each softmax expectation over an axis of a rank-4 tensor (Softmax over axis
    k, times a constant vector along k, ReduceSum over k: a detector's DFL head, ``[b, 4, 16, a]``
    -> ``[b, 4, a]``) as the axis moved to axis 1, Softmax over it and a 1x1 Conv by the vector
    (the same values up to rounding); returns the Softmax nodes rewritten. onnx2tf loses the
    layout of the 4-D softmax and its sum; a Conv over channels pins it."""
    from onnx import helper

    graph = model.graph
    constants = constant_tensors(graph)
    ranks = _ranks(model)
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    nodes = list(graph.node)
    changed = []
    for softmax in [n for n in graph.node if n.op_type == "Softmax"]:
        found = _expectation(softmax, readers, constants, ranks.get(softmax.input[0]), opset)
        if found is None:
            continue
        mul, reduce, axis, weights, keepdims = found
        name = softmax.name or softmax.output[0]
        order = [0, axis, *(a for a in (1, 2, 3) if a != axis)]
        moved, probs, summed = (f"{name}_{k}" for k in ("moved", "channels", "conv"))
        kernel = add_initializer(
            model, weights.reshape(1, -1, 1, 1).astype(np.float32), f"{name}_weights"
        )
        made = [
            helper.make_node("Transpose", [softmax.input[0]], [moved], name=moved, perm=order),
            helper.make_node("Softmax", [moved], [probs], name=name, axis=1),
            helper.make_node("Conv", [probs, kernel], [summed], name=summed, kernel_shape=[1, 1]),
        ]
        out = reduce.output[0]
        if keepdims:
            back = [int(i) for i in np.argsort(order)]
            made.append(helper.make_node("Transpose", [summed], [out], name=out, perm=back))
        elif opset >= 13:
            axes = add_initializer(model, np.array([1], dtype=np.int64), f"{name}_axes")
            made.append(helper.make_node("Squeeze", [summed, axes], [out], name=out))
        else:
            made.append(helper.make_node("Squeeze", [summed], [out], name=out, axes=[1]))
        where = nodes.index(softmax)
        nodes = [n for n in nodes if n not in (softmax, mul, reduce)]
        nodes[where:where] = made
        changed.append(name)
    if changed:
        replace_items(graph.node, nodes)
    return changed


def _expectation(
    softmax: Any,
    readers: dict[str, list[Any]],
    constants: dict[str, Any],
    rank: int | None,
    opset: int,
) -> tuple[Any, Any, int, np.ndarray, bool] | None:
    """The Mul and ReduceSum of a softmax expectation (see `expectations_as_conv`), the axis,
    the weight vector and whether the sum keeps its axis; None if ``softmax`` starts none."""
    from onnx import helper, numpy_helper

    if rank != 4:
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in softmax.attribute}
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1)) % 4
    muls = readers.get(softmax.output[0], [])
    if axis == 0 or len(muls) != 1 or muls[0].op_type != "Mul":
        return None
    mul = muls[0]
    other = [n for n in mul.input if n != softmax.output[0]]
    if len(other) != 1 or other[0] not in constants:
        return None
    weights = numpy_helper.to_array(constants[other[0]])
    padded = (1,) * (4 - weights.ndim) + weights.shape if weights.ndim <= 4 else ()
    if not padded or any(d != 1 for i, d in enumerate(padded) if i != axis):
        return None
    sums = readers.get(mul.output[0], [])
    if len(sums) != 1 or sums[0].op_type != "ReduceSum":
        return None
    reduce = sums[0]
    rattrs = {a.name: helper.get_attribute_value(a) for a in reduce.attribute}
    axes = rattrs.get("axes")
    if len(reduce.input) > 1 and reduce.input[1]:
        if reduce.input[1] not in constants:
            return None
        axes = numpy_helper.to_array(constants[reduce.input[1]]).tolist()
    if axes is None or [int(a) % 4 for a in axes] != [axis]:
        return None
    return mul, reduce, axis, weights.reshape(-1), bool(rattrs.get("keepdims", 1))


# ops whose rank-3+ output onnx2tf holds in ONNX's own axis order (it undoes its channels-last
# transpose of their input, or never made one)
_ONNX_ORDER = {"Reshape", "Flatten", "Squeeze", "MatMul", "Gemm"}
# ops whose output keeps the axis order of their first non-constant input
_ORDER_KEEPING = {
    "Slice", "Split", "Softmax", "LogSoftmax", "Sigmoid", "Relu", "Tanh", "Exp", "Log", "Neg",
    "Abs", "Sqrt", "Cast", "Identity", "Clip", "Concat", *_BROADCASTING,
}  # fmt: skip


def _in_onnx_order(tensor: str, constants: dict[str, Any], producers: dict[str, Any]) -> bool:
    """Whether onnx2tf holds ``tensor`` in ONNX's axis order: made by an `_ONNX_ORDER` op and
    passed on by `_ORDER_KEEPING` ones only (a graph input or a channel op's output: no)."""
    for _ in range(64):
        node = producers.get(tensor)
        if node is None:
            return False
        if node.op_type in _ONNX_ORDER:
            return True
        if node.op_type not in _ORDER_KEEPING:
            return False
        variables = [name for name in node.input if name and name not in constants]
        if not variables:
            return False
        tensor = variables[0]
    return False


def constants_below_rank3(model: Any) -> list[str]:
    """Give each broadcasting binary node (`_BROADCASTING`) whose operand is a float constant
    of rank >= 3 with leading 1s (a detector's anchors ``[1, 2, A]``), and whose other operand is
    of no lower rank and in ONNX's axis order (`_in_onnx_order`), that constant without its
    leading 1s, down to rank 2 (the same values by broadcasting); returns the nodes changed."""
    from onnx import numpy_helper

    producers = {out: node for node in model.graph.node for out in node.output}

    def lowered(tensor: Any, other: str, constants: Any, ranks: Callable[[], Any]) -> Any:
        if len(tensor.dims) < 3 or tensor.dims[0] != 1:
            return None
        if tensor.data_type != 1 or other in constants:  # FLOAT
            return None
        if not _in_onnx_order(other, constants, producers):
            return None
        if ranks().get(other, 0) < len(tensor.dims):
            return None
        value = numpy_helper.to_array(tensor)
        while value.ndim > 2 and value.shape[0] == 1:
            value = value[0]
        return None if value.ndim > 2 else np.ascontiguousarray(value)

    return _constant_operands(model, "low", lowered)
