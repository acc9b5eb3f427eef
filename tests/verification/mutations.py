"""Edits of a converted graph that mimic converter bugs, each changing one operation in place.

Every mutation keeps the graph valid (same shapes, same names for the results readers use), so
only the numbers can tell it apart from the correct graph.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Operation


def _replace(graph: Graph, op: Operation, op_type: str, inputs, attrs) -> Operation:
    """Swap `op` for a new operation; readers of its result read the new one's."""
    new = graph.add_operation(op_type, inputs, attrs, name=graph.fresh_name(op.name), before=op)
    for old, out in zip(op.outputs, new.outputs):
        graph.replace_operand(old, out)
    graph.remove_operation(op)
    return new


def _pick(graph: Graph, test, which: float = 0.5) -> Operation:
    """The operation in the middle (by default) of those that `test` accepts."""
    found = [op for op in graph.operations if test(op)]
    assert found, "the graph has no operation to mutate"
    return found[min(int(len(found) * which), len(found) - 1)]


def drop_bias(graph: Graph) -> str:
    """A conv2d's or gemm's bias left out (an importer forgetting an optional input)."""
    op = _pick(graph, lambda o: (o.op_type == "conv2d" and o.input("bias") is not None)
               or (o.op_type == "gemm" and len(o.inputs) > 2 and o.inputs[2] is not None))
    inputs = list(op.inputs)
    inputs[2] = None
    return _replace(graph, op, op.op_type, inputs, dict(op.attrs)).name


def pad_wrong_side(graph: Graph) -> str:
    """A conv2d's padding on the wrong side: [t, b, l, r] read as [b, t, r, l], or all of it
    at the beginning where it was symmetric (SAME_UPPER taken for SAME_LOWER)."""
    def padded(o):
        return o.op_type == "conv2d" and any(o.attr("padding") or [0])

    def lopsided(o):
        if not padded(o):
            return False
        t, b, l, r = o.attr("padding")
        return (t, l) != (b, r)

    op = _pick(graph, lopsided if any(lopsided(o) for o in graph.operations) else padded)
    t, b, l, r = op.attr("padding")
    padding = [b, t, r, l] if (t, l) != (b, r) else [t + b, 0, l + r, 0]
    return _replace(graph, op, op.op_type, list(op.inputs), {**op.attrs, "padding": padding}).name


def max_as_average(graph: Graph) -> str:
    op = _pick(graph, lambda o: o.op_type == "maxPool2d")
    return _replace(graph, op, "averagePool2d", list(op.inputs), dict(op.attrs)).name


def sub_for_add(graph: Graph) -> str:
    op = _pick(graph, lambda o: o.op_type == "add")
    return _replace(graph, op, "sub", list(op.inputs), dict(op.attrs)).name


def softmax_wrong_axis(graph: Graph) -> str:
    op = _pick(graph, lambda o: o.op_type == "softmax")
    rank = len(op.inputs[0].shape)
    axis = (op.attr("axis") - 1) % rank
    return _replace(graph, op, "softmax", list(op.inputs), {**op.attrs, "axis": axis}).name


def transposed_filter(graph: Graph) -> str:
    """A square conv2d filter with its spatial axes swapped (a layout permutation wrong)."""
    def square(o):
        if o.op_type != "conv2d" or o.inputs[1].kind != "constant":
            return False
        shape = o.inputs[1].shape
        h, w = (shape[1], shape[2]) if o.attr("filterLayout") == "ohwi" else (shape[2], shape[3])
        return h == w > 1

    op = _pick(graph, square)
    filt = op.inputs[1]
    axes = (0, 2, 1, 3) if op.attr("filterLayout") == "ohwi" else (0, 1, 3, 2)
    swapped = np.ascontiguousarray(np.transpose(filt.constant.numpy(), axes))
    const = graph.add_constant(graph.fresh_name(f"{filt.name}_transposed"), swapped)
    inputs = list(op.inputs)
    inputs[1] = const
    return _replace(graph, op, op.op_type, inputs, dict(op.attrs)).name


MUTATIONS = {"dropped bias": drop_bias, "padding on the wrong side": pad_wrong_side,
             "max pooling as average": max_as_average, "sub for add": sub_for_add,
             "softmax on the wrong axis": softmax_wrong_axis,
             "transposed filter": transposed_filter}
