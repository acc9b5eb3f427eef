"""`.onnx` output past protobuf's 2 GiB: the weights go to NAME.onnx.data beside the model
(ONNX's external data), streamed at aligned offsets, and ONNX Runtime runs the result as it
runs the source. The threshold (stream.EXTERNAL_OVER, 2 GiB less a margin) is lowered here so
that small models take that path; bench/bench_onnx_external.py writes a real 2.2 GiB one.

Before: any .onnx output of 2 GiB and more was refused ("the ONNX model would be 2.00 GiB"),
even when the source was an external-data model."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import converter
from converter.lowering.onnx import stream

from ..security.onnx_cases import cli, one_error_line


def _source(folder: Path, data_name: str = "src.onnx.data") -> Path:
    """An external-data model: y = relu(x @ w1 + b1) @ w2 + b2, w1 of 1.5 MiB (a weight ONNX
    Runtime maps), w2 of 32 KiB, b1 of 4 KiB, b2 of 32 bytes (under 1 KiB: kept inline)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in [("w1", (384, 1024)), ("b1", (1024,)), ("w2", (1024, 8)),
                                 ("b2", (8,))]]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["m"]),
             helper.make_node("Add", ["m", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", T.FLOAT, [2, 384])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [2, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    src = folder / "src.onnx"
    onnx.save_model(model, str(src), save_as_external_data=True, location=data_name,
                    size_threshold=0)
    return src


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("flags", [[], ["--verify"]])  # written in place, or staged first
def test_a_model_over_the_threshold_keeps_its_weights_beside_it(tmp_path, monkeypatch, flags):
    monkeypatch.setattr(stream, "EXTERNAL_OVER", 0, raising=False)  # as a model over 2 GiB is
    src = _source(tmp_path)
    out = tmp_path / "out" / "m.onnx"
    out.parent.mkdir()
    result = cli("convert", src, "-o", out, *flags)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output and f"{out}.data" in result.output
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.onnx", "m.onnx.data"]
    model = onnx.load(str(out), load_external_data=False)
    external = {}
    for t in model.graph.initializer:
        if t.data_location == T.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            assert info["location"] == "m.onnx.data"  # relative: the folder can move
            external[t.name] = (int(info["offset"]), int(info["length"]))
        else:
            assert len(t.raw_data) < 1024  # small ones stay in the model
    lengths = sorted(length for _, length in external.values())
    assert lengths == [4096, 32768, 1572864]
    for offset, length in external.values():
        assert offset % (65536 if length >= 1 << 20 else 64) == 0
    x = np.random.default_rng(1).standard_normal((2, 384)).astype(np.float32)
    np.testing.assert_allclose(_run(out, x), _run(src, x), rtol=1e-5, atol=1e-5)
    # and this converter reads it back, weights and all
    np.testing.assert_allclose(converter.run(converter.load(out), {"x": x})["y"], _run(src, x),
                               rtol=1e-5, atol=1e-5)


def test_a_model_under_the_threshold_is_one_file(tmp_path):
    src = _source(tmp_path)
    out = tmp_path / "out" / "m.onnx"
    out.parent.mkdir()
    assert cli("convert", src, "-o", out).exit_code == 0
    assert [p.name for p in out.parent.iterdir()] == ["m.onnx"]


def test_the_data_file_never_replaces_what_the_conversion_reads(tmp_path, monkeypatch):
    # The source keeps its weights in out.onnx.data: writing out.onnx with its data beside it
    # would replace them. Was: written over (a truncated source) once past the threshold.
    monkeypatch.setattr(stream, "EXTERNAL_OVER", 0, raising=False)
    src = _source(tmp_path, data_name="out.onnx.data")
    data = tmp_path / "out.onnx.data"
    before = data.read_bytes()
    line = one_error_line(cli("convert", src, "-o", tmp_path / "out.onnx"))
    assert line.startswith(f"error: {data}: writing it would replace {data} ")
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.onnx.data", "src.onnx"]


def test_a_model_too_big_even_without_its_weights_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "EXTERNAL_OVER", 0, raising=False)
    monkeypatch.setattr(stream, "_PROTOBUF_LIMIT", 100)  # as a graph of 2 GiB of nodes would be
    src = _source(tmp_path)
    out = tmp_path / "out" / "m.onnx"
    out.parent.mkdir()
    line = one_error_line(cli("convert", src, "-o", out))
    assert line.startswith(f"error: {out}: the ONNX model would be 0.00 GiB even with its "
                           f"weights in a data file; protobuf")
    assert list(out.parent.iterdir()) == []
