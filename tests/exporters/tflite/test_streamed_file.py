"""A .tflite file with big weights is written with them after the flatbuffer, each streamed
from its array: an nchw filter, held as a transposed view, lands in the file in TFLite's ohwi
order. LiteRT runs the file and our importer reads it back, both checked against numpy."""
from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as fb

import converter
from converter.ops.builder import GraphBuilder
from converter.exporters.tflite import flatbuffer, save_tflite, to_tflite

from .helpers import rand, run_litert

RNG = np.random.default_rng(31)


def _conv_nchw(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Valid 3x3 convolution of x [1, C, H, W] by w [O, C, 3, 3], in float64."""
    _, _, h, wd = x.shape
    out = np.zeros((1, w.shape[0], h - 2, wd - 2))
    for i in range(h - 2):
        for j in range(wd - 2):
            patch = x[0, :, i:i + 3, j:j + 3].astype(np.float64)
            out[0, :, i, j] = np.tensordot(w.astype(np.float64), patch, axes=3)
    return out


def test_streamed_weights_follow_the_flatbuffer_relaid_and_run(tmp_path, monkeypatch):
    monkeypatch.setattr(flatbuffer, "STREAM_MIN_BYTES", 0)  # this small model streams too
    b = GraphBuilder("conv")
    x = b.input("x", "float32", [1, 3, 6, 6])
    w = rand(RNG, (4, 3, 3, 3), "float32")  # oihw
    graph = b.build({"y": b.conv2d(x, b.constant(w, name="w"))})
    path = tmp_path / "m.tflite"
    assert save_tflite(graph, path) == [path]
    data = path.read_bytes()
    model = fb.ModelT.InitFromPackedBuf(data, 0)
    filt = next(t for t in model.subgraphs[0].tensors if list(t.shape) == [4, 3, 3, 3])
    buffer = model.buffers[filt.buffer]
    assert buffer.data is None and buffer.offset % 64 == 0 and buffer.size == w.nbytes
    assert data[buffer.offset:buffer.offset + buffer.size] == w.transpose(0, 2, 3, 1).tobytes()
    feed = rand(RNG, (1, 3, 6, 6), "float32")
    want = _conv_nchw(feed, w)
    got = run_litert(data, {"x": feed})["y"]
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    np.testing.assert_array_equal(got, run_litert(to_tflite(graph), {"x": feed})["y"])
    back = converter.run(converter.load(path), {"x": feed})["y"]
    np.testing.assert_allclose(back, want, atol=1e-5, rtol=1e-5)
