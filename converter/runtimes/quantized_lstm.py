"""ONNX Runtime's DynamicQuantizeLSTM (com.microsoft, what `quantize_dynamic` makes of an LSTM)
run with float activations: the measure of what its run-time rounding moves.

DynamicQuantizeLSTM quantizes its input and, at every step, its hidden state to uint8 with a
scale taken from their range, so each step's rounding feeds the next. A value that lands
within float32's error of a rounding tie is rounded either way by two correct float32
implementations (ORT's and the graph's), and the recurrence carries that one step of
difference through every later step and layer: over 80 steps and 3 layers it reaches the
size of the outputs, although both compute the same quantized math. How far the rounding
moves the outputs is measured by running the source with each such LSTM replaced by ONNX's
float LSTM on the same (dequantized) weights: the source's own spread for that op, as ORT at
MatMulNBits accuracy_level 0 is for its int8 activations.
"""
from __future__ import annotations

__all__ = ["FLOAT_LSTM_LABEL", "is_dynamic_lstm", "float_lstms"]

FLOAT_LSTM_LABEL = ("ORT with its DynamicQuantizeLSTM nodes as float LSTMs (float activations) "
                    "vs quantized")

_MS = "com.microsoft"
# DynamicQuantizeLSTM's inputs: X W R B sequence_lens initial_h initial_c P, then the scales
# and zero points of W and R; an LSTM takes the first eight.
_W, _R, _W_SCALE, _W_ZERO, _R_SCALE, _R_ZERO = 1, 2, 8, 9, 10, 11


def is_dynamic_lstm(node) -> bool:
    return node.op_type == "DynamicQuantizeLSTM" and node.domain == _MS


def float_lstms(model) -> int:
    """Replace, in place, every DynamicQuantizeLSTM of an ONNX model (If/Loop bodies
    included) by an LSTM whose W and R are the dequantized weights, (w - zero) * scale,
    transposed from ORT's [directions, input, 4 * hidden] to ONNX's [directions, 4 * hidden,
    input]. Nodes only: it works on a model whose initializers hold no data. Returns how many
    it replaced."""
    return _graph(model.graph)


def _graph(graph) -> int:
    from onnx import AttributeProto

    count, nodes = 0, []
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                count += _graph(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                count += sum(_graph(g) for g in attr.graphs)
        if not is_dynamic_lstm(node):
            nodes.append(node)
            continue
        count += 1
        nodes.extend(_float_lstm(node, f"{node.name or 'DynamicQuantizeLSTM'}_{count}_float"))
    del graph.node[:]
    graph.node.extend(nodes)
    return count


def _float_lstm(node, prefix: str) -> list:
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    inputs = list(node.input) + [""] * (12 - len(node.input))
    shape = f"{prefix}_scale_shape"  # [dirs] or [dirs, 4H] -> [dirs, 1, 1] or [dirs, 1, 4H]
    made = [helper.make_node("Constant", [], [shape], value=numpy_helper.from_array(
        np.array([0, 1, -1], np.int64), shape))]

    def dequantized(index: int, scale: int, zero: int, tag: str) -> str:
        w = f"{prefix}_{tag}"
        made.append(helper.make_node("Cast", [inputs[index]], [f"{w}_f"], to=TensorProto.FLOAT))
        value = f"{w}_f"
        if inputs[zero]:
            made.extend([
                helper.make_node("Cast", [inputs[zero]], [f"{w}_zf"], to=TensorProto.FLOAT),
                helper.make_node("Reshape", [f"{w}_zf", shape], [f"{w}_z"]),
                helper.make_node("Sub", [value, f"{w}_z"], [f"{w}_c"])])
            value = f"{w}_c"
        made.extend([helper.make_node("Reshape", [inputs[scale], shape], [f"{w}_s"]),
                     helper.make_node("Mul", [value, f"{w}_s"], [f"{w}_d"]),
                     helper.make_node("Transpose", [f"{w}_d"], [w], perm=[0, 2, 1])])
        return w

    w = dequantized(_W, _W_SCALE, _W_ZERO, "W")
    r = dequantized(_R, _R_SCALE, _R_ZERO, "R")
    lstm = helper.make_node("LSTM", [inputs[0], w, r] + inputs[3:8], list(node.output),
                            name=prefix)
    lstm.attribute.extend(node.attribute)  # hidden_size, direction, activations, clip, ...
    while lstm.input and not lstm.input[-1]:
        lstm.input.pop()
    return made + [lstm]
