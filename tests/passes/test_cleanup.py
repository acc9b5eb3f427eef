"""cleanup: dead code, identities and no-ops, reshape chains, adjacent transposes, cast chains."""
from __future__ import annotations

import numpy as np

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.passes.cleanup import collapse_reshape_chains, exactly_holds
from converter.formats.webnn_text import dumps


def clean(graph):
    [(_, result)] = run_passes(graph, ["cleanup"], PassContext())
    return result


def seeded(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


def same_outputs(before: dict, after: dict) -> None:
    """Everything cleanup does is data movement or exact: bit for bit."""
    assert before.keys() == after.keys()
    for key in before:
        assert before[key].dtype == after[key].dtype, key
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


def test_identities_go_and_outputs_keep_their_names():
    b = GraphBuilder("ids")
    x = b.input("x", "float32", [2, 3])
    r = b.relu(b.identity(x), name="r")
    g = b.build({"y": b.identity(r, name="y")})
    feeds = {"x": seeded((2, 3))}
    before = converter.run(g, feeds)

    result = clean(g)

    assert result.counts["identities"] == 2
    assert g.op_histogram() == {"relu": 1}
    [relu] = g.operations
    assert relu.inputs[0] is g.inputs["x"]
    assert g.outputs["y"] is relu.output and relu.output.name == "y"  # the name users read
    same_outputs(before, converter.run(g, feeds))


def test_the_identity_an_output_needs_stays():
    b = GraphBuilder("needed")
    x = b.input("x", "float32", [2])
    c = b.constant(np.array([1, 2], np.float32))
    g = b.build({"copy": b.identity(x), "table": b.identity(c), "y": b.add(x, c)})

    result = clean(g)

    assert not result.changed
    assert g.op_histogram() == {"identity": 2, "add": 1}
    assert result.notes and "kept 2 identity" in result.notes[0]


def test_dead_operations_and_constants_go():
    b = GraphBuilder("dead")
    x = b.input("x", "float32", [4])
    unused = b.constant(np.ones(4, np.float32))
    b.exp(b.add(x, unused))  # read by nobody
    b.constant(np.zeros(3, np.float32))  # read by nobody
    g = b.build({"y": b.neg(x)})

    result = clean(g)

    assert result.counts["dead_operations"] == 2 and result.counts["dead_constants"] == 2
    assert g.op_histogram() == {"neg": 1} and not g.constants


def test_reshape_chain_becomes_one_reshape_and_a_round_trip_none():
    b = GraphBuilder("reshapes")
    x = b.input("x", "float32", [2, 3, 4])
    flat = b.reshape(b.reshape(b.reshape(x, [6, 4]), [24]), [4, 6])
    back = b.reshape(b.reshape(x, [24]), [2, 3, 4])
    g = b.build({"flat": flat, "back": b.relu(back)})
    feeds = {"x": seeded((2, 3, 4))}
    before = converter.run(g, feeds)

    result = clean(g)

    assert result.counts["reshape_chains"] == 3 and result.counts["no_ops"] == 1
    assert g.op_histogram() == {"relu": 1, "reshape": 1}
    reshape = g.outputs["flat"].producer
    assert reshape.inputs[0] is g.inputs["x"] and reshape.attrs["newShape"] == [4, 6]
    assert g.outputs["back"].producer.inputs[0] is g.inputs["x"]
    same_outputs(before, converter.run(g, feeds))


def test_adjacent_transposes_compose_and_cancel():
    b = GraphBuilder("transposes")
    x = b.input("x", "float32", [2, 3, 4, 5])
    nhwc = b.transpose(x, permutation=[0, 2, 3, 1])
    round_trip = b.transpose(nhwc, permutation=[0, 3, 1, 2])  # back to nchw: cancels
    y3 = b.input("y3", "float32", [2, 3, 4])
    twice = b.transpose(b.transpose(y3, permutation=[1, 0, 2]), permutation=[0, 2, 1])
    g = b.build({"same": b.relu(round_trip), "moved": twice})
    feeds = {"x": seeded((2, 3, 4, 5)), "y3": seeded((2, 3, 4), seed=1)}
    before = converter.run(g, feeds)

    result = clean(g)

    assert result.counts["transposes_cancelled"] == 1
    assert result.counts["transposes_composed"] == 1
    assert (result.counts["transposes_before"], result.counts["transposes_after"]) == (4, 1)
    assert g.outputs["same"].producer.inputs[0] is g.inputs["x"]
    moved = g.outputs["moved"].producer
    # Dimension i of the result is y3's dimension p[q[i]]: p = [1, 0, 2], q = [0, 2, 1].
    assert moved.attrs["permutation"] == [1, 2, 0] and moved.output.shape == (3, 4, 2)
    np.testing.assert_array_equal(converter.run(g, feeds)["moved"],
                                  feeds["y3"].transpose(1, 2, 0))
    same_outputs(before, converter.run(g, feeds))


def test_exact_cast_chains_shorten_and_lossy_ones_stay():
    b = GraphBuilder("casts")
    i = b.input("i", "int32", [5])
    h = b.input("h", "float16", [5])
    f = b.input("f", "float32", [5])
    widened = b.cast(b.cast(i, "int64"), "float32")  # int32 -> int64 is exact
    round_trip = b.cast(b.cast(h, "float32"), "float16")  # float16 -> float32 -> float16
    truncated = b.cast(b.cast(f, "int32"), "float32")  # drops fractions: must stay
    g = b.build({"widened": widened, "round_trip": b.neg(round_trip),
                 "truncated": truncated})
    feeds = {"i": np.array([-7, 0, 3, 2**24 + 1, 99], np.int32),
             "h": np.array([0.5, -1.25, 65504, np.inf, 3.1], np.float16),
             "f": np.array([1.75, -2.5, 3.0, 0.25, -0.75], np.float32)}
    before = converter.run(g, feeds)

    result = clean(g)

    assert result.counts["cast_chains"] == 2 and result.counts["no_ops"] == 1
    assert g.op_histogram() == {"cast": 3, "neg": 1}
    widen = g.outputs["widened"].producer
    assert widen.inputs[0] is g.inputs["i"] and widen.attrs["dataType"] == "float32"
    assert g.outputs["round_trip"].producer.inputs[0] is g.inputs["h"]
    assert g.outputs["truncated"].producer.inputs[0].producer.op_type == "cast"
    after = converter.run(g, feeds)
    assert after["truncated"].tolist() == [1.0, -2.0, 3.0, 0.0, -0.0]
    same_outputs(before, after)


def test_exactly_holds_table():
    assert exactly_holds("int64", "int32") and exactly_holds("float32", "float16")
    assert exactly_holds("float16", "int8") and exactly_holds("int32", "uint8")
    assert not exactly_holds("float32", "int32")  # 2**24 + 1 is not a float32
    assert not exactly_holds("int32", "uint32") and not exactly_holds("float16", "uint32")


def test_no_ops_go():
    b = GraphBuilder("noops")
    x = b.input("x", "float32", [2, 3])
    y = b.reshape(x, [2, 3])
    y = b.expand(y, [2, 3])
    y = b.transpose(y, permutation=[0, 1])
    y = b.slice(y, [0, 0], [2, 3])
    y = b.pad(y, [0, 0], [0, 0])
    y = b.tile(y, [1, 1])
    y = b.reverse(y, axes=[])
    y = b.concat([y], 1)
    y = b.cast(y, "float32")
    g = b.build({"y": b.sigmoid(y)})
    feeds = {"x": seeded((2, 3))}
    before = converter.run(g, feeds)

    result = clean(g)

    assert result.counts["no_ops"] == 9
    assert g.op_histogram() == {"sigmoid": 1}
    same_outputs(before, converter.run(g, feeds))


def test_an_output_no_op_on_an_input_becomes_the_identity_it_needs():
    b = GraphBuilder("boundary")
    x = b.input("x", "float32", [2, 3])
    g = b.build({"y": b.reshape(x, [2, 3], name="y")})

    result = clean(g)

    assert result.counts["no_ops"] == 1 and g.op_histogram() == {"identity": 1}
    assert g.outputs["y"].name == "y"
    feeds = {"x": seeded((2, 3))}
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], feeds["x"])


def test_a_clean_graph_is_left_unchanged():
    b = GraphBuilder("clean")
    x = b.input("x", "float32", [2, 3])
    g = b.build({"y": b.transpose(b.relu(x))})
    text = dumps(g)

    result = clean(g)

    assert not result.changed and dumps(g) == text


# -- names, explicit unit strides, default permutations ------------------------------------------
def test_a_bypassed_op_leaves_the_surviving_operand_its_own_name():
    b = GraphBuilder("names")
    x = b.input("x", "float32", [2, 3])
    r = b.relu(x, name="r")
    s = b.reshape(r, [2, 3], name="s")  # a no-op
    g = b.build({"y": b.add(s, s, name="y")})
    clean(g)
    assert g.op_histogram() == {"relu": 1, "add": 1}
    add = next(op for op in g.operations if op.op_type == "add")
    assert add.inputs[0].name == "r"


def test_a_composed_transpose_keeps_the_name_of_the_result_it_replaces():
    b = GraphBuilder("names")
    x = b.input("x", "float32", [2, 3, 4])
    t1 = b.transpose(b.relu(x), permutation=[1, 0, 2], name="t1")
    t2 = b.transpose(t1, permutation=[0, 2, 1], name="t2")
    g = b.build({"y": b.relu(t2, name="y")})
    feeds = {"x": seeded((2, 3, 4))}
    before = converter.run(g, feeds)
    clean(g)
    [t] = [op for op in g.operations if op.op_type == "transpose"]
    assert t.output.name == "t2" and t.attr("permutation") == [1, 2, 0]
    same_outputs(before, converter.run(g, feeds))


def test_a_slice_with_explicit_unit_strides_is_a_no_op():
    b = GraphBuilder("slice")
    x = b.input("x", "float32", [2, 3])
    s = b.slice(b.relu(x), [0, 0], [2, 3], strides=[1, 1])
    g = b.build({"y": b.relu(s)})
    result = clean(g)
    assert result.counts["no_ops"] == 1 and "slice" not in g.op_histogram()


def test_transposes_without_a_permutation_reverse_and_cancel():
    b = GraphBuilder("default")
    x = b.input("x", "float32", [2, 3, 4])
    g = b.build({"y": b.relu(b.transpose(b.transpose(b.relu(x))))})
    result = clean(g)
    assert result.counts["transposes_cancelled"] == 1 and "transpose" not in g.op_histogram()


def test_collapse_reshape_chains_returns_how_many_reshapes_went():
    # reshape -> reshape collapses to one, a reshape to the same shape goes: 3 reshapes become
    # 1; the relu and transpose around them stay and are not counted.
    b = GraphBuilder("chains")
    x = b.input("x", "float32", [2, 3, 4])
    r = b.relu(b.reshape(b.reshape(x, [6, 4], name="r1"), [4, 6], name="r2"), name="act")
    same = b.reshape(r, [4, 6], name="same")
    g = b.build({"y": b.transpose(same, permutation=[1, 0], name="t")})
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 12}
    before = converter.run(g, feeds)

    assert collapse_reshape_chains(g) == 2

    assert g.op_histogram() == {"reshape": 1, "relu": 1, "transpose": 1}
    after = converter.run(g, feeds)
    want = np.maximum(feeds["x"].reshape(4, 6), 0).T  # numpy: the same reshape, relu, transpose
    np.testing.assert_array_equal(after["y"], want)
    np.testing.assert_array_equal(before["y"], want)
