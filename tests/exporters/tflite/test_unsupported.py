"""What TFLite cannot express is reported before anything is built: every operation at once,
each with its reason, in one line."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError, UnsupportedError
from converter.exporters.tflite import export_problems, to_tflite


def _graph_with_four_problems():
    b = GraphBuilder("mixed")
    x = b.input("x", "int64", [2, 3])
    p = b.input("p", "float32", [1, 1, 6, 6])
    i = b.input("i", "int32", [2, 3])
    t = b.input("t", "float32", [1, 1, 1, 1, 1, 1, 2])
    graph = b.build({
        "fine": b.relu(p),
        "argmax": b.argMax(x, 1),                                       # int64: no kernel
        "pool": b.averagePool2d(p, windowDimensions=[2, 2], dilations=[2, 2]),
        "pow": b.pow(i, i),                                             # computed exponent
        "transpose": b.transpose(t),                                    # rank 7
        "cast": b.cast(p, "uint64"),
    })
    return graph


def test_every_problem_is_listed_at_once():
    graph = _graph_with_four_problems()
    with pytest.raises(UnsupportedError) as caught:
        to_tflite(graph)
    error = caught.value
    assert len(error.items) == 5
    assert error.items[0] == ("argMax 'argMax': int64 is not supported (supported: float32, "
                              "float16, int32, int8, uint8)")
    assert error.items[1] == "averagePool2d 'averagePool2d': TFLite's pools have no dilations"
    assert error.items[2].startswith("pow 'pow': TFLite's integer POW rejects negative")
    assert error.items[3] == ("transpose 'transpose': 't' has rank 7; TFLite's kernels for this "
                              "op take rank 6 at most")
    assert error.items[4] == "cast 'cast': TFLite's CAST has no kernel to uint64"
    line = str(error)
    assert "\n" not in line and line.startswith("graph 'mixed': 5 unsupported: argMax")
    assert "export the graph as .onnx or .webnn instead" in line
    assert export_problems(graph) == error.items


def test_4bit_inputs_and_outputs_are_reported():
    b = GraphBuilder()
    x = b.input("x", "int4", [2, 2])
    y = b.dequantizeLinear(x, b.constant(np.ones((1, 1), np.float32)),
                           b.constant("int4", [1, 1], [0]))
    q = b.quantizeLinear(b.input("f", "float32", [2, 2]), b.constant(np.ones((1, 1), np.float32)),
                         b.constant("int4", [1, 1], [0]))
    problems = export_problems(b.build({"y": y, "raw": q}))
    assert problems[0] == ("int4 graph input or output 'x': TFLite models take no 4-bit inputs "
                           "or outputs")
    assert problems[1] == ("int4 graph input or output 'raw': TFLite models take no 4-bit "
                           "inputs or outputs")
    assert "a 4-bit input must be a constant" in problems[2]
    assert "int4 results: TFLite computes no 4-bit tensors" in problems[3]


def test_an_exportable_graph_has_no_problems_and_an_invalid_one_is_refused():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    graph = b.build({"y": b.relu(x)})
    assert export_problems(graph) == []
    graph.outputs["y"] = b.graph.add_input("other", "float32", [2])
    graph.inputs.pop("other")  # an output no input, constant or operation makes
    with pytest.raises(ConverterError, match="only a valid graph can be exported"):
        to_tflite(graph)
