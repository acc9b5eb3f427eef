"""`.onnx` output streamed at the wire level (converter/lowering/onnx/stream.py): the file
parses to the same model `to_onnx` builds, and ONNX Runtime computes the same numbers."""
from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import converter
from converter.lowering.onnx import to_onnx
from converter.lowering.onnx.stream import _varint, write_onnx
from converter.testing.light_models import light_model


def _graph():
    rng = np.random.default_rng(0)
    b = converter.GraphBuilder("streamed")
    x = b.input("x", "float32", [1, 3, 8, 8])
    w = b.constant(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    y = b.conv2d(x, w, padding=[1, 1, 1, 1],
                 bias=b.constant(rng.standard_normal(4).astype(np.float32)))
    big = b.constant(rng.standard_normal((4, 8, 8)).astype(np.float16))
    z = b.add(b.relu(y), b.cast(b.reshape(big, [1, 4, 8, 8]), "float32"))
    filled = b.constant(np.full((1, 4, 8, 8), 0.5, np.float32))
    i = b.add(b.constant(np.arange(6, dtype=np.int64)), b.constant(np.ones(6, np.int64)))
    return b.build({"y": b.mul(z, filled), "i": i})


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**21, 2**35 + 7])
def test_varint_matches_protobuf(value):
    # an int64 field's encoding, cut after its one-byte key, is the varint alone
    t = onnx.TensorProto()
    t.dims.append(value)
    assert t.SerializeToString()[1:] == _varint(value)


def test_streamed_file_is_the_model_to_onnx_builds(tmp_path):
    graph = _graph()
    path = tmp_path / "m.onnx"
    with open(path, "wb") as f:
        size = write_onnx(graph, f)
    assert path.stat().st_size == size
    streamed, built = onnx.load(str(path)), to_onnx(graph)
    onnx.checker.check_model(streamed, full_check=True)
    assert [n.SerializeToString() for n in streamed.graph.node] == \
        [n.SerializeToString() for n in built.graph.node]
    got = {t.name: onnx.numpy_helper.to_array(t) for t in streamed.graph.initializer}
    want = {t.name: onnx.numpy_helper.to_array(t) for t in built.graph.initializer}
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
        assert got[name].dtype == want[name].dtype


def test_streamed_resnet50_runs_like_the_graph(tmp_path):
    graph = converter.load(light_model("resnet50", tmp_path, seed=0))
    out = tmp_path / "r.onnx"
    converter.save(graph, out)
    x = np.random.default_rng(1).random((1, 3, 224, 224), dtype=np.float32)
    options = ort.SessionOptions()  # the executor's level: the same kernels, the same bits
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(out), options, providers=["CPUExecutionProvider"])
    (name,) = graph.outputs
    got = session.run(None, {next(iter(graph.inputs)): x})[0]
    # The file is the lowering written for people to run (ONNX BatchNormalization, ORT's
    # kernels), the same model to_onnx gives: bit for bit; against the executor's exact form
    # (the spec's formula in float64), within the whole-model bounds.
    in_memory = ort.InferenceSession(to_onnx(graph).SerializeToString(), options,
                                     providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, in_memory.run(None, {next(iter(graph.inputs)): x})[0])
    want = converter.run(graph, {next(iter(graph.inputs)): x})[name]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)



def test_a_model_at_the_size_limit_is_written_and_one_byte_over_is_refused(monkeypatch):
    # protobuf's real limit (2 GiB - 1) would take a 2 GiB constant laid out in memory; the
    # same comparison is checked against a small model's exact size
    from converter.lowering.onnx import stream

    graph = _graph()
    out = io.BytesIO()
    size = write_onnx(graph, out)
    assert len(out.getvalue()) == size
    monkeypatch.setattr(stream, "_PROTOBUF_LIMIT", size)
    assert write_onnx(graph, io.BytesIO()) == size
    monkeypatch.setattr(stream, "_PROTOBUF_LIMIT", size - 1)
    with pytest.raises(converter.ConverterError) as info:
        write_onnx(graph, out := io.BytesIO())
    assert "protobuf, and so every ONNX reader, stops at 2 GiB; write a .webnn or .json" \
        in info.value.line()
    assert out.getvalue() == b""  # nothing written
