"""Hostile ONNX files (issue 10): everything a conversion materialises is counted against the
memory budget before it is allocated; past it a value stays a graph op or the conversion stops
with one line naming the size and the flag that allows it."""
from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import converter
from converter.budget import MemoryBudget, parse_size
from converter.errors import ConverterError

from .onnx_cases import cli, convert_refused, model, one_error_line, vi, write


# -- 2. memory budget ---------------------------------------------------------------------------
def test_sizes_parse_with_units():
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("512MiB") == 512 << 20
    assert parse_size("1.5GB") == 1_500_000_000
    assert parse_size("1000") == 1000
    for bad in ("", "12 parsecs", "-1", "GiB"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_budget_defaults():
    b = MemoryBudget()
    assert b.max_tensor == 1 << 30 and b.max_total == 256 << 20
    assert MemoryBudget(weights_bytes=548 << 20).max_total == 2 * (548 << 20)  # vgg19-sized
    with pytest.raises(ConverterError, match=r"--max-tensor-bytes 2GiB"):
        b.claim((1 << 30) + 1, "a value")


def _constant_of_shape(shape, fill=1.5) -> onnx.ModelProto:
    s = numpy_helper.from_array(np.array(shape, np.int64), "shape")
    value = numpy_helper.from_array(np.array([fill], np.float32), "value")
    return model([helper.make_node("ConstantOfShape", ["shape"], ["c"], value=value),
                   helper.make_node("Add", ["x", "c"], ["y"])],
                  [vi("x", shape=[1] * len(shape))], [vi("y", shape=list(shape))], [s])


def test_constant_of_shape_past_the_limit_stays_an_expand(tmp_path):
    # Issue 10 finding 3: folding ConstantOfShape allocated without limit. 2048 x 2048 float32
    # is 16 MiB; with a 1 MiB per-tensor limit it must stay a graph op, allocating nothing big.
    src = write(_constant_of_shape([2048, 2048]), tmp_path)
    tracemalloc.start()
    try:
        graph = converter.load(src, max_tensor_bytes="1MiB")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak
    expands = [op for op in graph.operations if op.op_type == "expand"]
    assert len(expands) == 1 and expands[0].attrs["newShape"] == [2048, 2048]
    assert expands[0].inputs[0].shape == ()
    y = converter.run(graph, {"x": np.array([[2.0]], np.float32)})["y"]
    assert y.shape == (2048, 2048) and np.all(y == 3.5)


def test_constant_of_shape_within_the_limit_is_folded(tmp_path):
    src = write(_constant_of_shape([4, 8]), tmp_path)
    graph = converter.load(src)
    assert [op.op_type for op in graph.operations] == ["add"]
    y = converter.run(graph, {"x": np.array([[2.0]], np.float32)})["y"]
    np.testing.assert_array_equal(y, np.full((4, 8), 3.5, np.float32))


def test_a_huge_constant_of_shape_is_refused_without_allocating(tmp_path):
    # The issue's own example: [30000, 30000, 4] floats would be 13.4 GiB. It stays an expand,
    # which WebNN then refuses (more elements than the spec allows): one line, nothing big held.
    src = write(_constant_of_shape([30000, 30000, 4]), tmp_path)
    tracemalloc.start()
    try:
        line = convert_refused(src, tmp_path / "out")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak
    assert "shape [30000, 30000, 4] has 3600000000 elements, more than the spec's limit" in line


def _range_model(count: int) -> onnx.ModelProto:
    start, limit, delta = (numpy_helper.from_array(np.array(v, np.int64), n)
                           for v, n in ((0, "start"), (count, "limit"), (1, "delta")))
    return model([helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
                   helper.make_node("Cast", ["r"], ["c"], to=T.FLOAT),
                   helper.make_node("Add", ["x", "c"], ["y"])],
                  [vi("x", shape=[1])], [vi("y", shape=[count])], [start, limit, delta])


def test_a_range_of_empty_inputs_is_a_clear_error(tmp_path):
    empty = numpy_helper.from_array(np.zeros(0, np.int64), "start")
    one = [numpy_helper.from_array(np.array(v, np.int64), n) for v, n in ((4, "limit"),
                                                                          (1, "delta"))]
    m = model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])], [],
               [vi("y", T.INT64)], [empty, *one])
    src = write(m, tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert "Range" in line


def test_the_flag_names_what_would_be_allocated(tmp_path):
    # Range has no WebNN form: past the limit the conversion fails, naming size and flag.
    src = write(_range_model(1 << 28), tmp_path)
    line = convert_refused(src, tmp_path / "out", "--max-tensor-bytes", "64MiB")
    assert "Range" in line and "would allocate 2.0 GiB" in line
    assert "over the per-tensor limit of 64.0 MiB" in line and "--max-tensor-bytes 2GiB" in line
    with pytest.raises(ConverterError, match="max_tensor_bytes="):
        converter.load(src, max_tensor_bytes=64 << 20)


def test_tile_past_the_limit_stays_a_tile(tmp_path):
    base = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    m = model([helper.make_node("Tile", ["w", "reps"], ["t"]),
                helper.make_node("Add", ["x", "t"], ["y"])],
               [vi("x", shape=[1, 1])], [vi("y", shape=[640, 640])],
               [numpy_helper.from_array(base, "w"),
                numpy_helper.from_array(np.array([10, 10], np.int64), "reps")])
    src = write(m, tmp_path)
    graph = converter.load(src, max_tensor_bytes="256KiB")
    assert sorted(op.op_type for op in graph.operations) == ["add", "tile"]
    y = converter.run(graph, {"x": np.ones((1, 1), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.tile(base, (10, 10)) + 1)
    folded = converter.load(src)  # within the default limit it folds
    assert [op.op_type for op in folded.operations] == ["add"]


def test_the_total_limit_counts_every_computed_value(tmp_path):
    nodes, inits = [], []
    for i in range(4):  # four 1 MiB folded values: 4 MiB in all
        inits.append(numpy_helper.from_array(np.array([512, 512], np.int64), f"s{i}"))
        nodes.append(helper.make_node("ConstantOfShape", [f"s{i}"], [f"c{i}"],
                                      value=numpy_helper.from_array(np.array([i + 1.0],
                                                                             np.float32))))
    nodes += [helper.make_node("Sum", ["x"] + [f"c{i}" for i in range(4)], ["y"])]
    src = write(model(nodes, [vi("x", shape=[512, 512])], [vi("y", shape=[512, 512])],
                        inits), tmp_path)
    line = convert_refused(src, tmp_path / "out", "--max-total-bytes", "3MiB")
    assert "taking the conversion past its limit of 3.0 MiB" in line
    assert "--max-total-bytes 4MiB" in line
    graph = converter.load(src, max_total_bytes="5MiB")
    y = converter.run(graph, {"x": np.zeros((512, 512), np.float32)})["y"]
    assert np.all(y == 10)


def test_a_bad_size_flag_is_a_usage_error(tmp_path):
    src = write(_constant_of_shape([4, 8]), tmp_path)
    result = cli("convert", src, "-o", tmp_path / "o.webnn", "--max-tensor-bytes", "lots")
    assert result.exit_code == 2 and "is not a size" in result.output


def test_the_flags_reach_check_and_verify(tmp_path):
    src = write(_constant_of_shape([2048, 2048]), tmp_path)
    folded = cli("check", src, "--target", "portable", "--json")
    kept = cli("check", src, "--target", "portable", "--json", "--max-tensor-bytes", "1MiB")
    assert '"operations": 1' in folded.output and '"operations": 2' in kept.output
    verified = cli("verify", src, "--max-total-bytes", "1MiB")
    assert verified.exit_code == 0 and "pass" in verified.output, verified.output
    line = one_error_line(cli("verify", write(_range_model(1 << 28), tmp_path, "r.onnx"),
                                "--max-tensor-bytes", "64MiB"))
    assert "--max-tensor-bytes 2GiB" in line


@pytest.mark.parametrize("dims", [[100000, 100000, 100000], [3, 4]])
def test_an_initializer_with_dims_but_no_data(tmp_path, dims):
    # Issue 10 findings 3 and 6: this ended in an internal error.
    w = T(name="w", data_type=T.FLOAT, dims=dims)
    src = write(model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", shape=[1])],
                        [vi("y")], [w]), tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert f"initializer 'w' declares shape {dims}" in line and "but holds no data" in line


def test_a_constant_attribute_with_dims_but_no_data(tmp_path):
    value = T(name="v", data_type=T.FLOAT, dims=[100000, 100000, 100000])
    src = write(model([helper.make_node("Constant", [], ["c"], value=value, name="k"),
                         helper.make_node("Add", ["x", "c"], ["y"])], [vi("x", shape=[1])],
                        [vi("y")]), tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert "Constant 'k' attribute 'value' declares shape [100000, 100000, 100000] " \
           "(4000000000000000 bytes) but holds no data" in line


def test_typed_field_data_is_claimed_before_decoding(tmp_path):
    w = helper.make_tensor("w", T.FLOAT, [2048], np.ones(2048, np.float32))
    src = write(model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", shape=[2048])],
                        [vi("y", shape=[2048])], [w]), tmp_path)
    line = convert_refused(src, tmp_path / "out", "--max-tensor-bytes", "4KiB")
    assert "initializer 'w' would allocate 8.0 KiB" in line


def test_a_sparse_tensor_with_a_huge_dense_shape(tmp_path):
    values = numpy_helper.from_array(np.ones(2, np.float32), "s")
    indices = numpy_helper.from_array(np.array([0, 5], np.int64), "s_i")
    sparse = helper.make_sparse_tensor(values, indices, [1 << 20, 1 << 20])
    src = write(model([helper.make_node("Add", ["x", "s"], ["y"])], [vi("x", shape=[1])],
                        [vi("y")], sparse=[sparse]), tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert "sparse initializer 's' (dense) would allocate 4.0 TiB" in line


def test_a_sparse_index_outside_its_shape(tmp_path):
    values = numpy_helper.from_array(np.ones(2, np.float32), "s")
    indices = numpy_helper.from_array(np.array([0, 99], np.int64), "s_i")
    sparse = helper.make_sparse_tensor(values, indices, [4])
    src = write(model([helper.make_node("Add", ["x", "s"], ["y"])], [vi("x", shape=[4])],
                        [vi("y", shape=[4])], sparse=[sparse]), tmp_path)
    assert "an index lies outside its 4 elements" in convert_refused(src, tmp_path / "out")


def test_a_sparse_initializer_imports_with_its_values(tmp_path):
    values = numpy_helper.from_array(np.array([2.0, -3.0], np.float32), "s")
    indices = numpy_helper.from_array(np.array([[0, 1], [2, 0]], np.int64), "s_i")
    sparse = helper.make_sparse_tensor(values, indices, [3, 2])
    src = write(model([helper.make_node("Add", ["x", "s"], ["y"])], [vi("x", shape=[3, 2])],
                        [vi("y", shape=[3, 2])], sparse=[sparse]), tmp_path)
    y = converter.run(converter.load(src), {"x": np.zeros((3, 2), np.float32)})["y"]
    np.testing.assert_array_equal(y, [[0, 2], [0, 0], [-3, 0]])
