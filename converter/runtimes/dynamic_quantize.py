"""ONNX's DynamicQuantizeLinear (what `quantize_dynamic` makes of a MatMul's input:
transformers.js's q8 files) run with its quotient moved by float32 rounding noise: the measure
of what its run-time rounding moves.

DynamicQuantizeLinear rounds x / scale to an integer at run time, the scale taken from the
tensor's own range. A quotient at (or within float32's error of) a rounding tie, k + 0.5, is
rounded either way by two correct float32 implementations: one whose x is a few ULP away
rounds it to the other neighbour, one quantization step apart, and a decoder's KV cache keeps
that step for every later position. The result is discontinuous in float32 rounding noise, so
float32's bounds between two runtimes' logits say nothing there. How far that rounding moves
the source's own outputs is measured by running the source twice more with every quotient
x / scale multiplied by 1 + 2**-23, then by 1 - 2**-23, before it is rounded (the scale and
zero point are the node's own): the quotient moves by 1 or 2 of its float32 ULP, so every
exact tie goes to its other neighbour in one of the two runs, and nothing but quotients
within 1-2 ULP of a tie changes. Their distance from the plain run is the source's own
spread, as ORT with DynamicQuantizeLSTM in float is for that op (quantized_lstm.py).
"""
from __future__ import annotations

__all__ = ["MOVE", "is_dynamic_quantize", "moved_activations"]

# q * (1 + 2**-23) is q plus 1 or 2 of its ULP (q * 2**-23 is 1 to 2 ULP of q, rounded to
# one of them), never q itself: float32 noise, not a tolerance. (Moving x instead of the
# quotient can leave an exact tie where it is: 1 ULP of x may be half an ULP of x / scale.)
MOVE = 2.0 ** -23


def is_dynamic_quantize(node) -> bool:
    return node.op_type == "DynamicQuantizeLinear" and node.domain in ("", "ai.onnx")


def moved_activations(model, direction: int) -> int:
    """Rewrite, in place, every DynamicQuantizeLinear of an ONNX model (If/Loop bodies
    included): its quantized output becomes round_half_even(x / scale * (1 + direction *
    MOVE)) + zero_point, clipped to uint8, with the scale and zero point the node computes
    from x itself (what ORT's kernel computes, the quotient moved). `direction` is +1 or
    -1. Nodes only: it works on a model whose initializers hold no data. Returns how
    many nodes it rewrote."""
    if direction not in (1, -1):
        raise ValueError(f"direction is +1 or -1, not {direction!r}")
    return _graph(model.graph, direction, [0])


def _graph(graph, direction: int, count: list[int]) -> int:
    from onnx import AttributeProto

    before, nodes = count[0], []
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                _graph(attr.g, direction, count)
            elif attr.type == AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _graph(sub, direction, count)
        if not is_dynamic_quantize(node) or len(node.output) < 3 or not node.output[0]:
            nodes.append(node)
            continue
        count[0] += 1
        nodes.extend(_moved(node, f"{node.name or 'DynamicQuantizeLinear'}_{count[0]}_moved",
                            direction))
    del graph.node[:]
    graph.node.extend(nodes)
    return count[0] - before


def _moved(node, prefix: str, direction: int) -> list:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    x, (y, scale, zero) = node.input[0], node.output[:3]
    # the node's scale and zero point need outputs of their own to be read
    scale, zero = scale or f"{prefix}_scale", zero or f"{prefix}_zero"

    def constant(tag: str, value: float) -> tuple[object, str]:
        name = f"{prefix}_{tag}"
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(value, np.float32), name)), name

    made, names = zip(*(constant(tag, v) for tag, v in (
        ("factor", 1.0 + direction * MOVE), ("low", 0.0), ("high", 255.0))))
    factor, low, high = names
    # What ORT's kernel computes (x / scale, rounded half to even, plus the zero point,
    # within uint8's range), with the quotient moved before it is rounded.
    return [*made,
            helper.make_node("DynamicQuantizeLinear", [x], [f"{prefix}_unused", scale, zero],
                             name=node.name),
            helper.make_node("Div", [x, scale], [f"{prefix}_q"]),
            helper.make_node("Mul", [f"{prefix}_q", factor], [f"{prefix}_qm"]),
            helper.make_node("Round", [f"{prefix}_qm"], [f"{prefix}_r"]),
            helper.make_node("Cast", [zero], [f"{prefix}_z"], to=TensorProto.FLOAT),
            helper.make_node("Add", [f"{prefix}_r", f"{prefix}_z"], [f"{prefix}_s"]),
            helper.make_node("Clip", [f"{prefix}_s", low, high], [f"{prefix}_c"]),
            helper.make_node("Cast", [f"{prefix}_c"], [y], to=TensorProto.UINT8)]
