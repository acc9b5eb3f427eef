"""fold_constants: constant-only operations become constants computed by the executor."""
from __future__ import annotations

import numpy as np

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.budget import limits
from converter.ir import ConstantData
from converter.passes.fold_constants import GROWTH_PER_OP


def fold(graph):
    [(_, result)] = run_passes(graph, ["fold_constants"], PassContext())
    return result


def same_outputs(before: dict, after: dict) -> None:
    """Data movement and exact integer arithmetic: bit for bit."""
    assert before.keys() == after.keys()
    for key in before:
        assert before[key].dtype == after[key].dtype, key
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


def test_constant_subexpression_and_cast_fold_into_one_constant():
    b = GraphBuilder("sub")
    x = b.input("x", "float32", [2, 3])
    w = b.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    offsets = b.constant(np.array([1, 2, 3], np.int64), name="offsets")
    table = b.add(b.transpose(w), b.cast(offsets, "float32"), name="table")
    g = b.build({"y": b.mul(x, table)})
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)}
    before = converter.run(g, feeds)

    result = fold(g)

    assert result.changed and result.counts["folded"] == 3  # transpose, cast, add
    assert g.op_histogram() == {"mul": 1}
    # transpose([[0, 1], [2, 3], [4, 5]]) + [1, 2, 3] = [[0, 2, 4], [1, 3, 5]] + [1, 2, 3]
    assert list(g.constants) == ["table"]  # the folded value keeps the result's name
    np.testing.assert_array_equal(g.constants["table"].constant.numpy(),
                                  np.array([[1, 4, 7], [2, 5, 8]], np.float32))
    assert result.counts["weights_bytes_before"] == 24 + 24
    assert result.counts["weights_bytes_after"] == 24
    same_outputs(before, converter.run(g, feeds))


def test_integer_shape_arithmetic_folds_with_integer_semantics():
    b = GraphBuilder("shape_math")
    x = b.input("x", "float32", [2, 12])
    dims = b.constant(np.array([7, -7, 9], np.int32))
    divisor = b.constant(np.array([2, 2, 4], np.int32))
    # Integer division in the executor truncates toward zero (ONNX Div): 3, -3, 2.
    quotient = b.div(dims, divisor)
    g = b.build({"y": b.add(x, b.reduceSum(b.cast(quotient, "float32")))})
    feeds = {"x": np.zeros((2, 12), np.float32)}
    before = converter.run(g, feeds)

    result = fold(g)

    assert result.counts["folded"] == 3 and g.op_histogram() == {"add": 1}
    [value] = [c.constant for c in g.constants.values()]
    assert value.data_type == "float32" and value.shape == ()
    assert float(value.numpy()) == 3 - 3 + 2
    same_outputs(before, converter.run(g, feeds))


def test_a_folded_graph_output_reads_its_constant_through_an_identity():
    b = GraphBuilder("out")
    x = b.input("x", "float32", [3])
    c = b.constant(np.array([1, -2, 3], np.float32))
    shifted = b.relu(c, name="shifted")
    g = b.build({"shifted": shifted, "y": b.add(x, shifted)})
    feeds = {"x": np.array([10, 20, 30], np.float32)}
    before = converter.run(g, feeds)

    fold(g)

    assert g.op_histogram() == {"add": 1, "identity": 1}
    out = g.outputs["shifted"]
    assert out.name == "shifted" and out.producer.op_type == "identity"
    value = out.producer.inputs[0]
    assert value.is_constant
    np.testing.assert_array_equal(value.constant.numpy(), [1, 0, 3])
    # The other reader takes the constant itself, not the identity.
    assert g.outputs["y"].producer.inputs[1] is value
    same_outputs(before, converter.run(g, feeds))
    # A second run changes nothing: the identity an output needs stays.
    assert not fold(g).changed and g.op_histogram() == {"add": 1, "identity": 1}


def test_a_uniform_result_is_stored_as_a_fill_and_grows_nothing():
    b = GraphBuilder("fill")
    x = b.input("x", "float32", [256, 256])
    big = b.expand(b.constant("float32", 2.0), [256, 256])  # 256 KiB if stored as an array
    g = b.build({"y": b.mul(x, big)})
    feeds = {"x": np.random.default_rng(1).random((256, 256), dtype=np.float32)}
    before = converter.run(g, feeds)

    result = fold(g)

    assert result.counts["folded"] == 1 and g.op_histogram() == {"mul": 1}
    [value] = [c.constant for c in g.constants.values()]
    assert value.fill == 2.0 and value.shape == (256, 256)
    assert result.counts["weights_bytes_after"] == 0
    same_outputs(before, converter.run(g, feeds))


def test_an_expansion_that_would_grow_the_weights_is_kept():
    b = GraphBuilder("grow")
    x = b.input("x", "float32", [256, 256])
    row = b.constant(np.arange(256, dtype=np.float32))
    g = b.build({"y": b.mul(x, b.expand(row, [256, 256]))})

    result = fold(g)

    # 256 * 256 * 4 bytes stored, 1 KiB freed: over the per-op limit.
    assert 256 * 256 * 4 - 1024 > GROWTH_PER_OP
    assert not result.changed and result.counts["kept_growth"] == 1
    assert g.op_histogram() == {"expand": 1, "mul": 1}
    assert any("expand" in n and f"+{256 * 256 * 4 - 1024} bytes" in n for n in result.notes)


def test_big_dequantized_weights_stay_quantized_small_ones_fold():
    b = GraphBuilder("quant")
    x = b.input("x", "float32", [1, 128])
    rng = np.random.default_rng(2)
    q = b.constant(rng.integers(-128, 127, (128, 64), dtype=np.int8))  # 8192 elements
    scale = b.constant(np.full((128, 64), 0.5, np.float32))
    zero = b.constant(np.zeros((128, 64), np.int8))
    w = b.dequantizeLinear(q, scale, zero)
    small_q = b.constant(np.array([10, 252, 0, 6], np.uint8))
    small = b.dequantizeLinear(small_q, b.constant(np.array([0.5, 0.25, 2.0, 1.0], np.float32)),
                               b.constant(np.array([2, 0, 1, 6], np.uint8)))
    y = b.add(b.matmul(x, w), b.reduceSum(small))
    g = b.build({"y": y})
    feeds = {"x": rng.standard_normal((1, 128)).astype(np.float32)}
    before = converter.run(g, feeds)

    result = fold(g)

    assert result.counts["kept_quantized"] == 1
    assert g.op_histogram() == {"add": 1, "dequantizeLinear": 1, "matmul": 1}
    assert g.operations[0].inputs[0].data_type == "int8"
    # (10 - 2) * 0.5 + (252 - 0) * 0.25 + (0 - 1) * 2.0 + (6 - 6) * 1.0 = 4 + 63 - 2 + 0
    folded = [c for c in g.constants.values() if c.shape == ()]
    assert [float(c.constant.numpy()) for c in folded] == [4.0 + 63.0 - 2.0 + 0.0]
    assert any("stay quantized" in n for n in result.notes)
    same_outputs(before, converter.run(g, feeds))


def test_split_of_a_constant_folds_every_result():
    b = GraphBuilder("split")
    x = b.input("x", "int32", [2])
    parts = b.split(b.constant(np.array([5, 6, 7, 8], np.int32)), 2)
    g = b.build({"y": b.mul(b.add(x, parts[0]), parts[1])})
    feeds = {"x": np.array([1, 2], np.int32)}
    before = converter.run(g, feeds)

    result = fold(g)

    assert result.counts["folded"] == 1 and g.op_histogram() == {"add": 1, "mul": 1}
    add, mul = g.operations
    np.testing.assert_array_equal(add.inputs[1].constant.numpy(), [5, 6])
    np.testing.assert_array_equal(mul.inputs[1].constant.numpy(), [7, 8])
    assert converter.run(g, feeds)["y"].tolist() == [(1 + 5) * 7, (2 + 6) * 8]
    same_outputs(before, converter.run(g, feeds))


def test_float_results_match_the_executor_bit_for_bit():
    b = GraphBuilder("floats")
    x = b.input("x", "float32", [4])
    c = b.constant(np.array([0.1, 1.7, -3.2, 100.0], np.float32))
    g = b.build({"y": b.add(x, b.softmax(b.sigmoid(b.exp(c)), 0))})
    feeds = {"x": np.random.default_rng(3).standard_normal(4).astype(np.float32)}
    before = converter.run(g, feeds)

    assert fold(g).counts["folded"] == 3
    assert g.op_histogram() == {"add": 1}
    same_outputs(before, converter.run(g, feeds))  # folding ran the same kernels


def test_ops_reading_inputs_and_dead_ops_are_left_alone():
    b = GraphBuilder("alone")
    x = b.input("x", "float32", [2])
    b.neg(b.constant(np.ones(2, np.float32)))  # dead: cleanup's business
    g = b.build({"y": b.relu(x)})

    result = fold(g)

    assert not result.changed and result.counts["folded"] == 0
    assert g.op_histogram() == {"neg": 1, "relu": 1}


def test_an_op_that_would_materialise_past_the_memory_limit_is_kept():
    # Issue 10 finding 3: a fill costs one number in the weights but its full size when the
    # executor computes with it; a 4 MiB fill under a 1 MiB per-tensor limit is not evaluated.
    from converter.budget import limits
    from converter.ir import ConstantData

    b = GraphBuilder("materialise")
    x = b.input("x", "float32", [1])
    fill = b.graph.add_constant("ones", ConstantData("float32", (1024, 1024), fill=1.0))
    total = b.reduceSum(fill, axes=[0, 1], name="total")
    g = b.build({"y": b.add(x, b.reshape(total, [1]))})
    feeds = {"x": np.array([0.5], np.float32)}
    before = converter.run(g, feeds)
    assert before["y"][0] == 1024 * 1024 + 0.5  # by hand: a million ones, plus x

    with limits(max_tensor_bytes="1MiB"):
        result = fold(g)

    assert result.counts["kept_memory"] == 1 and result.counts["folded"] == 0
    assert g.op_histogram() == {"reduceSum": 1, "reshape": 1, "add": 1}
    assert any("reduceSum 'total' (4194308 bytes)" in n and "--max-tensor-bytes" in n
               for n in result.notes)
    same_outputs(before, converter.run(g, feeds))
    assert fold(g).counts["folded"] == 2  # under the default limit: reduceSum and reshape


# -- the keep rules at their exact thresholds ---------------------------------------------------
def _expand_graph(rows: int, copies: int = 1, fill: bool = False, size: int = 16):
    """`copies` expands of their own non-uniform [size] float32 constant (64 bytes each, freed
    by folding) to [rows, size], each added to the input."""
    b = GraphBuilder("grow")
    x = b.input("x", "float32", [rows, size])
    y = x
    for i in range(copies):
        c = b.constant("float32", 0.5, name=f"c{i}") if fill else b.constant(
            np.arange(size, dtype=np.float32) + i, name=f"c{i}")
        y = b.add(y, b.expand(c, [rows, size], name=f"e{i}"))
    return b.build({"y": y})


def test_growth_per_op_threshold_is_inclusive():
    # 1025 x 16 float32 = 65,600 bytes stored, 64 freed: growth 65,536 = the limit, folded
    g = _expand_graph(1025)
    result = fold(g)
    assert result.changed and result.counts["folded"] == 1 and result.counts["failed"] == 0
    assert "expand" not in g.op_histogram()
    # one more row: 65,600 over the limit, kept
    g = _expand_graph(1026)
    result = fold(g)
    assert result.counts["folded"] == 0 and result.counts["kept_growth"] == 1
    assert "expand 'e0' (+65600 bytes)" in result.notes[0]
    assert f"more than {GROWTH_PER_OP // 1024} KiB" in result.notes[0]


def test_growth_of_the_whole_run_stops_at_one_mebibyte():
    # each expand grows the weights by 1025 * 64 - 64 = 65,536 bytes: 16 of them fill 1 MiB
    # exactly (the limit is inclusive), the 17th goes over
    g = _expand_graph(1025, copies=17)
    x = np.zeros((1025, 16), np.float32)
    before = converter.run(g, {"x": x})
    result = fold(g)
    assert result.counts["folded"] == 16 and result.counts["kept_growth"] == 1
    assert "expand 'e16'" in result.notes[0] and f"{1 << 20} bytes in all" in result.notes[0]
    np.testing.assert_array_equal(converter.run(g, {"x": x})["y"], before["y"])


def test_a_uniform_result_is_free_up_to_the_probe_size():
    # expand of a fill: evaluated although 64 MiB is far over the per-op limit, and stored as
    # a fill (no growth)
    b = GraphBuilder("fill")
    e = b.expand(b.constant("float32", 0.5, name="c"), [16 * 1024 * 1024], name="e")
    g = b.build({"y": b.reduceSum(e, name="y")})
    result = fold(g)
    assert result.counts["folded"] == 2 and result.counts["kept_growth"] == 0
    assert converter.run(g, {})["y"] == np.float32(8 * 1024 * 1024)
    # one element more than the probe size: kept without computing it
    b = GraphBuilder("fill")
    e = b.expand(b.constant("float32", 0.5, name="c"), [16 * 1024 * 1024 + 1], name="e")
    g = b.build({"y": b.reduceSum(e, name="y")})
    result = fold(g)
    assert result.counts["folded"] == 0 and result.counts["kept_growth"] == 1


def test_dequantize_threshold_is_inclusive():
    for n, folded in ((4096, True), (4097, False)):
        b = GraphBuilder("q")
        q = b.constant(np.arange(n, dtype=np.int8).reshape(1, n) % 7, name="q")
        w = b.dequantizeLinear(q, b.constant(np.full((1, 1), 0.5, np.float32)),
                               b.constant(np.zeros((1, 1), np.int8)), name="w")
        x = b.input("x", "float32", [1, n])
        g = b.build({"y": b.add(x, w)})
        result = fold(g)
        assert (result.counts["kept_quantized"] == 0) == folded, n
        assert ("dequantizeLinear" in g.op_histogram()) != folded


def test_an_unread_result_of_a_multi_result_op_is_dropped():
    b = GraphBuilder("split")
    c = b.constant(np.arange(6, dtype=np.float32), name="c")
    first, _ = b.split(c, [2, 4], name="s")
    x = b.input("x", "float32", [2])
    g = b.build({"y": b.add(x, first)})
    result = fold(g)
    assert result.counts["folded"] == 1 and g.op_histogram() == {"add": 1}
    assert [list(o.shape) for o in g.constants.values()] == [[2]]
    out = converter.run(g, {"x": np.ones(2, np.float32)})["y"]
    assert out.tolist() == [1.0, 2.0]


def test_constant_only_ops_with_an_absent_optional_operand_fold():
    # conv2d of constants without a bias: the None slot is neither copied nor read
    b = GraphBuilder("nobias")
    c = b.conv2d(b.constant(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)),
                 b.constant(np.ones((1, 1, 2, 2), np.float32)), name="c")
    x = b.input("x", "float32", [1, 1, 2, 2])
    g = b.build({"y": b.add(x, c)})
    result = fold(g)
    assert result.counts["folded"] == 1 and g.op_histogram() == {"add": 1}
    out = converter.run(g, {"x": np.zeros((1, 1, 2, 2), np.float32)})["y"]
    assert out.reshape(-1).tolist() == [8.0, 12.0, 20.0, 24.0]


def test_a_constant_another_op_still_reads_is_kept():
    b = GraphBuilder("shared")
    c = b.constant(np.arange(4, dtype=np.float32).reshape(2, 2), name="c")
    x = b.input("x", "float32", [2, 2])
    g = b.build({"y": b.add(b.add(x, c), b.transpose(c, name="t"))})
    feeds = {"x": np.ones((2, 2), np.float32)}
    before = converter.run(g, feeds)
    assert fold(g).counts["folded"] == 1
    assert "c" in g.constants and g.constants["c"].uses()
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], before["y"])


def test_a_folded_4_bit_result_is_stored_packed_with_its_values():
    # quantizeLinear to int4 (by hand from the spec: round-half-even(c / s) + zeroPoint,
    # saturated to [-8, 7]): [-3.2, 2, 7.6 / 2, -20] -> [-3, 2, 4, -20] + [0, 1, -1, 0]
    # -> [-3, 3, 3, -8]; dequantizeLinear reads a graph input, so it stays.
    b = GraphBuilder("four_bit")
    xs = b.input("xs", "float32", [1, 4])
    c = b.constant(np.array([[-3.2, 2.0, 7.6, -20.0]], np.float32), name="c")
    s = b.constant(np.array([[1.0, 1.0, 2.0, 1.0]], np.float32), name="s")
    zp = b.constant("int4", [1, 4], [0, 1, -1, 0])
    q = b.quantizeLinear(c, s, zp, name="q")
    g = b.build({"y": b.dequantizeLinear(q, xs, zp, name="dq")})
    feeds = {"xs": np.array([[0.5, 1.0, 2.0, 0.25]], np.float32)}
    before = converter.run(g, feeds)
    # (q - zeroPoint) * xs = [-3, 2, 4, -8] * [0.5, 1, 2, 0.25]
    np.testing.assert_array_equal(before["y"], [[-1.5, 2.0, 8.0, -2.0]])

    result = fold(g)

    assert result.counts["folded"] == 1 and g.op_histogram() == {"dequantizeLinear": 1}
    folded = g.constants["q"]
    assert folded.data_type == "int4" and folded.constant.fill is None
    assert folded.constant.numpy().tolist() == [[-3, 3, 3, -8]]
    assert folded.constant.nbytes == 2  # four 4-bit values, two to a byte
    same_outputs(before, converter.run(g, feeds))


def test_a_constant_read_twice_by_one_op_is_freed_once():
    # concat(c, c) stores 2 * 65600 bytes and frees c's 65600 once: growth 65600 > 64 KiB.
    size = GROWTH_PER_OP // 4 + 16
    b = GraphBuilder("twice")
    x = b.input("x", "float32", [2, size])
    c = b.constant(np.arange(size, dtype=np.float32), name="c")
    g = b.build({"y": b.add(x, b.reshape(b.concat([c, c], 0, name="cc"), [2, size]))})
    feeds = {"x": np.ones((2, size), np.float32)}
    before = converter.run(g, feeds)
    np.testing.assert_array_equal(before["y"], np.tile(np.arange(size) + 1.0, (2, 1)))

    result = fold(g)

    assert result.counts["kept_growth"] == 1 and result.counts["folded"] == 0
    assert g.op_histogram() == {"concat": 1, "reshape": 1, "add": 1}
    same_outputs(before, converter.run(g, feeds))


def test_the_memory_limit_itself_still_folds():
    # reduceSum of a [1024, 1024] float32 fill materialises 4194304 + 4 bytes: at a limit of
    # exactly that it folds (the limit is a maximum, not a bound to stay under).
    b = GraphBuilder("at_limit")
    x = b.input("x", "float32", [1])
    fill = b.graph.add_constant("ones", ConstantData("float32", (1024, 1024), fill=1.0))
    g = b.build({"y": b.add(x, b.reshape(b.reduceSum(fill, axes=[0, 1], name="total"), [1]))})
    feeds = {"x": np.array([0.5], np.float32)}

    with limits(max_tensor_bytes=4194308):
        result = fold(g)

    assert result.counts["kept_memory"] == 0 and result.counts["folded"] == 2
    assert g.op_histogram() == {"add": 1}
    assert converter.run(g, feeds)["y"].tolist() == [1024 * 1024 + 0.5]


def test_an_op_the_executor_cannot_compute_is_kept_with_a_note():
    # ONNX Runtime refuses an integer division by a constant zero; the op stays as it was,
    # the note says why, and the other constant-only op still folds.
    b = GraphBuilder("div_zero")
    x = b.input("x", "int32", [2])
    n = b.constant(np.array([6, 7], np.int32), name="n")
    zero = b.constant(np.array([0, 1], np.int32), name="zero")
    q = b.div(n, zero, name="q")
    doubled = b.mul(n, b.constant(np.array([2, 2], np.int32), name="two"), name="doubled")
    g = b.build({"y": b.add(x, q, name="y"), "z": b.add(x, doubled, name="z")})

    result = fold(g)

    assert result.counts["failed"] == 1 and result.counts["folded"] == 1
    assert g.op_histogram() == {"div": 1, "add": 2}
    [note] = [n for n in result.notes if n.startswith("could not compute")]
    assert note.startswith("could not compute div 'q': ") and "division by zero" in note
    assert g.constants["doubled"].constant.numpy().tolist() == [12, 14]
