"""The .tflite file itself: its signature, its weights (in place, aligned, float16 kept
float16, large weights after the flatbuffer), outputs that need a tensor of their own, and an
atomic save."""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

from converter.ops.builder import GraphBuilder
from converter.errors import UnsupportedError
from converter.exporters.tflite import save_tflite, to_tflite
from converter.ir import ConstantData

from .helpers import check, operator_codes, rand, run_litert

RNG = np.random.default_rng(23)


def _model(data: bytes):
    return fb.ModelT.InitFromPackedBuf(data, 0)


def _weighted_graph():
    b = GraphBuilder("weighted")
    x = b.input("x", "float32", [2, 8])
    w = rand(RNG, (8, 3), "float32")
    graph = b.build({"y": b.matmul(x, b.constant(w, name="w"))})
    return graph, w


def test_signature_names_inputs_and_outputs_by_their_webnn_names():
    b = GraphBuilder("named")
    x, y = b.input("x", "float32", [2]), b.input("input.1", "int32", [3])
    graph = b.build({"x": b.relu(x), "sum:0": b.add(y, y)})  # an output named like an input
    data = to_tflite(graph)
    model = _model(data)
    signature = model.signatureDefs[0]
    assert signature.signatureKey.decode() == "serving_default"
    assert [t.name.decode() for t in signature.inputs] == ["x", "input.1"]
    assert [t.name.decode() for t in signature.outputs] == ["x", "sum:0"]
    assert model.description.decode() == "webnn-converter" and model.version == 3
    got = run_litert(data, {"x": np.array([-1, 2], np.float32),
                            "input.1": np.array([1, 2, 3], np.int32)})
    assert got["x"].tolist() == [0, 2] and got["sum:0"].tolist() == [2, 4, 6]


def test_outputs_that_alias_an_input_or_each_other_get_their_own_tensors():
    # identity(x) is x's own tensor, and r is one tensor read under two output names: a
    # TFLite output is the tensor an operator writes, so each gets a copy (a RESHAPE).
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    r = b.relu(x)
    graph = b.build({"same": b.identity(x), "r1": r, "r2": r})
    got = check(graph, {"x": np.array([-1, 3], np.float32)})
    assert got["same"].tolist() == [-1, 3]
    assert got["r1"].tolist() == got["r2"].tolist() == [0, 3]
    data = to_tflite(graph)
    assert sorted(operator_codes(data)) == ["RELU", "RESHAPE", "RESHAPE"]
    model = _model(data)
    assert len(set(model.subgraphs[0].outputs.tolist())) == 3


def test_weights_are_written_as_they_are_and_aligned():
    graph, w = _weighted_graph()
    data = to_tflite(graph)
    model = _model(data)
    tensor = next(t for t in model.subgraphs[0].tensors if t.name.decode() == "w")
    raw = w.tobytes()
    start = data.find(raw)
    assert start > 0 and start % 16 == 0
    assert bytes(model.buffers[tensor.buffer].data) == raw


def test_unused_constants_are_left_out_and_fills_cost_one_number():
    b = GraphBuilder()
    x = b.input("x", "float32", [64, 64])
    b.constant(np.ones(1000, np.float32))  # unused
    fill = b.graph.add_constant("fill", ConstantData("float32", (64, 64), fill=0.5))
    graph = b.build({"y": b.add(x, fill)})
    data = to_tflite(graph)
    assert len(data) < 4096
    assert operator_codes(data) == ["BROADCAST_TO", "ADD"]
    got = check(graph, {"x": np.ones((64, 64), np.float32)}, ulp=0)
    assert (got["y"] == 1.5).all()


def test_float16_weights_stay_float16_under_dequantize():
    b = GraphBuilder()
    x = b.input("x", "float16", [2, 64])
    w = rand(RNG, (64, 32), "float16")
    graph = b.build({"y": b.matmul(x, b.constant(w))})
    data = to_tflite(graph)
    assert w.tobytes() in data and w.astype(np.float32).tobytes() not in data
    assert {"DEQUANTIZE", "CAST"} <= set(operator_codes(data))
    check(graph, {"x": rand(RNG, (2, 64), "float16")}, ulp=2 * 64)


def test_weights_past_the_inline_limit_follow_the_flatbuffer():
    graph, w = _weighted_graph()
    data = to_tflite(graph, inline_limit=0)
    model = _model(data)
    tensor = next(t for t in model.subgraphs[0].tensors if t.name.decode() == "w")
    buffer = model.buffers[tensor.buffer]
    assert buffer.data is None and buffer.offset % 64 == 0 and buffer.size == w.nbytes
    assert data[buffer.offset:buffer.offset + buffer.size] == w.tobytes()
    x = rand(RNG, (2, 8), "float32")
    assert run_litert(data, {"x": x})["y"].tolist() == \
        run_litert(to_tflite(graph), {"x": x})["y"].tolist()


@pytest.mark.parametrize("inline_limit", [0, 1 << 30])
def test_save_writes_the_same_bytes(tmp_path, inline_limit):
    graph, _ = _weighted_graph()
    path = tmp_path / "m.tflite"
    assert save_tflite(graph, path, inline_limit=inline_limit) == [path]
    assert path.read_bytes() == to_tflite(graph, inline_limit=inline_limit)


def test_a_graph_that_cannot_be_exported_leaves_no_file(tmp_path):
    b = GraphBuilder()
    x = b.input("x", "int64", [2, 3])
    graph = b.build({"y": b.argMax(x, 1)})
    path = tmp_path / "m.tflite"
    with pytest.raises(UnsupportedError):
        save_tflite(graph, path)
    assert list(tmp_path.iterdir()) == []
