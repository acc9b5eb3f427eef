"""A constant index outside the axis it indexes makes a graph invalid (converter/ir/
constant_indices.py): `validate` lists it for every indexing op, in the ONNX importer's words."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import converter
from cli.main import main
from converter.errors import ConverterError

X = np.zeros((3, 4), np.float32)


def _indexing(b, op: str, x, idx):
    if op == "gather":
        return b.gather(x, idx, axis=1, name="op")
    if op == "gatherElements":
        return b.gatherElements(x, idx, axis=0, name="op")
    if op == "gatherND":
        return b.gatherND(x, idx, name="op")
    updates = b.input("u", "float32", [1, 4])
    if op == "scatterElements":
        return b.scatterElements(x, idx, updates, axis=0, name="op")
    return b.scatterND(x, idx, updates, name="op")


# op -> (indices within range, the same with one out of range, the problem it makes)
CASES = {
    "gather": ([[0, -4], [3, 1]], [[0, -4], [4, 1]],
               "index 4 is out of range for axis 1 of size 4 (indices must lie in [-4, 3])"),
    "gather-negative": ([[0, -4], [3, 1]], [[0, -5], [3, 1]],
                        "index -5 is out of range for axis 1 of size 4 (indices must lie in "
                        "[-4, 3])"),
    "gatherElements": ([[0, 1, 2, -3]], [[0, 1, 3, -3]],
                       "index 3 is out of range for axis 0 of size 3 (indices must lie in "
                       "[-3, 2])"),
    "gatherND": ([[2, 3], [-3, -4]], [[2, 3], [-3, 4]],
                 "index 4 is out of range for axis 1 of size 4 (indices must lie in [-4, 3])"),
    "scatterElements": ([[0, 1, 2, -3]], [[0, -4, 2, 1]],
                        "index -4 is out of range for axis 0 of size 3 (indices must lie in "
                        "[-3, 2])"),
    "scatterND": ([[-1]], [[3]],
                  "index 3 is out of range for axis 0 of size 3 (indices must lie in [-3, 2])"),
}


def _write(folder: Path, op: str, indices) -> Path:
    """The graph with in-range `indices` built and saved, then its weights file given
    `indices` (the builder refuses an invalid graph; a hostile file is not built)."""
    good = np.asarray(CASES[op][0], np.int64)
    b = converter.GraphBuilder("g")
    x = b.input("x", "float32", list(X.shape))
    graph = b.build({"y": _indexing(b, op.split("-")[0], x, b.constant(good, name="idx"))})
    path = folder / f"{op}.webnn"
    converter.save(graph, path)
    entry = json.loads((folder / f"{op}.manifest.json").read_text())["tensors"]["idx"]
    weights = bytearray((folder / f"{op}.weights").read_bytes())
    data = np.asarray(indices, np.int64).tobytes()
    weights[entry["byteOffset"]:entry["byteOffset"] + len(data)] = data
    (folder / f"{op}.weights").write_bytes(weights)
    return path


@pytest.mark.parametrize("op", CASES)
def test_validate_lists_an_out_of_range_constant_index(tmp_path, op):
    within, outside, problem = CASES[op]
    r = CliRunner().invoke(main, ["validate", str(_write(tmp_path, op, within))])
    assert r.exit_code == 0, r.output
    path = _write(tmp_path, op, outside)
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 1
    name = op.split("-")[0]
    assert r.stderr.splitlines() == [f"{path}: {name} 'op': {problem}",
                                     f"{path}: invalid (1 problem)"]
    r = CliRunner().invoke(main, ["inspect", str(path)])  # and nothing reads it as valid
    assert r.exit_code == 2 and problem in r.stderr


def test_a_fill_of_an_out_of_range_index_is_invalid(tmp_path):
    path = _write(tmp_path, "gather", CASES["gather"][0])
    path.write_text(path.read_text().replace('@weights("idx")', "@scalar(-7)"))
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == (f"{path}: gather 'op': index -7 is out of range for "
                                        f"axis 1 of size 4 (indices must lie in [-4, 3])")


def _onnx_problem(tmp_path, op_type: str, axis: int, indices) -> str:
    """What the ONNX importer says of the same op with these constant indices."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    init = [numpy_helper.from_array(np.asarray(indices, np.int64), "idx")]
    inputs = ["x", "idx"]
    if op_type == "ScatterElements":
        init.append(numpy_helper.from_array(np.zeros((1, 4), np.float32), "u"))
        inputs.append("u")
    node = helper.make_node(op_type, inputs, ["y"], axis=axis, name="op")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], init),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / f"{op_type}.onnx"
    onnx.save(model, path)
    with pytest.raises(ConverterError) as caught:
        converter.load(path)
    return caught.value.line()


@pytest.mark.parametrize("op, onnx_op, axis", [("gather", "Gather", 1),
                                                ("gatherElements", "GatherElements", 0),
                                                ("scatterElements", "ScatterElements", 0)])
def test_the_rule_and_words_are_the_onnx_importers(tmp_path, op, onnx_op, axis):
    _, outside, problem = CASES[op]
    assert problem in _onnx_problem(tmp_path, onnx_op, axis, outside)
