"""converter.importers.onnx.model_file.read_model: what it refuses (one FormatError line each)
and what it returns: the initializers as arrays with the values written, and the conversion's
memory budget sized from the model's weights (twice them, at least 256 MiB)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from converter.budget import MIN_TOTAL_BYTES
from converter.errors import ConverterError, FormatError
from converter.importers.onnx.model_file import read_model


def _save(path, inits, nodes=None, outputs=None):
    nodes = [H.make_node("Identity", ["w"], ["y"])] if nodes is None else nodes
    outputs = [H.make_tensor_value_info("y", TP.FLOAT, None)] if outputs is None else outputs
    model = H.make_model(H.make_graph(nodes, "m", [], outputs, inits),
                         opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_missing_paths_folders_and_graphless_files_are_refused(tmp_path):
    with pytest.raises(FormatError, match="no such file") as e:
        read_model(tmp_path / "absent.onnx")
    assert e.value.where == str(tmp_path / "absent.onnx")
    with pytest.raises(FormatError, match="not a regular file"):
        read_model(tmp_path)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(onnx.ModelProto(ir_version=9).SerializeToString())
    with pytest.raises(FormatError, match="it has no graph"):
        read_model(empty)
    bare = _save(tmp_path / "bare.onnx", [], nodes=[], outputs=[])  # a graph with nothing in it
    with pytest.raises(FormatError, match="it has no graph"):
        read_model(bare)
    (tmp_path / "junk.onnx").write_bytes(b"\xff" * 16)
    with pytest.raises(FormatError, match=r"not a readable ONNX model: a truncated or overlong "
                                          r"varint at byte 0") as e:
        read_model(tmp_path / "junk.onnx")
    assert "\n" not in e.value.line()


def test_a_graph_with_outputs_and_no_nodes_is_a_model(tmp_path):
    path = _save(tmp_path / "m.onnx", [nh.from_array(np.ones(2, np.float32), "y")], nodes=[])
    model, arrays, _ = read_model(path)
    assert len(model.graph.node) == 0 and arrays["y"].tolist() == [1.0, 1.0]


def test_initializers_come_back_with_their_values_and_the_budget_follows_them(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    k = np.array([7, -8], np.int64)
    model, arrays, budget = read_model(_save(tmp_path / "m.onnx",
                                             [nh.from_array(w, "w"), nh.from_array(k, "k")]))
    assert model.graph.node[0].op_type == "Identity"
    assert arrays["w"].tolist() == w.tolist() and arrays["k"].tolist() == [7, -8]
    assert budget.max_total == MIN_TOTAL_BYTES  # 40 bytes of weights: the floor
    _, _, given = read_model(tmp_path / "m.onnx", max_total_bytes=1000, max_tensor_bytes=100)
    assert (given.max_total, given.max_tensor) == (1000, 100)


def test_big_weights_raise_the_default_total_to_twice_them(tmp_path):
    n = (MIN_TOTAL_BYTES // 2 + (1 << 20)) // 4  # float32 values: 129 MiB
    (tmp_path / "w.bin").write_bytes(b"")
    with open(tmp_path / "w.bin", "r+b") as f:
        f.truncate(n * 4)  # a sparse file of zeros: mapped, never read in
    tensor = onnx.TensorProto(name="w", data_type=TP.FLOAT, dims=[n],
                              data_location=TP.EXTERNAL)
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", str(n * 4))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    _, arrays, budget = read_model(_save(tmp_path / "m.onnx", [tensor]))
    assert arrays["w"].shape == (n,) and budget.max_total == 2 * n * 4

