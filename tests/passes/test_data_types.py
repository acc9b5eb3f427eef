"""data_types: int64 -> int32 on targets without int64; other unsupported types noted."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter import dtypes
from converter.ops.builder import GraphBuilder
from converter.ops.registry import all_ops
from converter.passes import PassContext, run_passes
from converter.targets import Target
from converter.formats.webnn_text import dumps

NO_INT64 = [t for t in dtypes.SPEC_DATA_TYPES if t not in ("int64", "uint64")]


def target(name: str, *, op_types=NO_INT64, io_types=NO_INT64, drop=()) -> Target:
    """Every op at any rank with `op_types`; graph inputs, outputs and constants with
    `io_types`; `drop` removes data types from every op."""
    types = [t for t in op_types if t not in drop]
    limits = {kind: {"dataTypes": list(io_types), "rankRange": {"min": 0, "max": 8}}
              for kind in ("input", "constant", "output")}
    for name_, opdef in all_ops().items():
        limits[name_] = {key: {"dataTypes": types, "rankRange": {"min": 0, "max": 8}}
                         for key in opdef.limits}
    return Target(name=name, limits=limits)


def retype(graph, t: Target | None):
    [(_, result)] = run_passes(graph, ["data_types"], PassContext(target=t))
    return result


def int64_operands(graph) -> list[str]:
    return sorted(o.name for o in graph.operands() if o.data_type == "int64")


def index_graph():
    """int64 token ids, int64 index arithmetic, a gather, an int64 argMax and a cast to int64:
    what ONNX models hand over."""
    b = GraphBuilder("indices")
    ids = b.input("ids", "int64", [2, 3])
    table = b.constant(np.arange(40, dtype=np.float32).reshape(10, 4), name="table")
    shifted = b.add(b.mul(ids, b.constant(np.array([2], np.int64), name="two")),
                    b.constant(np.array(1, np.int64), name="one"), name="shifted")
    rows = b.gather(table, shifted, name="rows")  # [2, 3, 4]
    best = b.argMax(rows, 2, outputDataType="int64", name="best")
    count = b.cast(b.reduceSum(rows, axes=[2]), "int64", name="count")
    return b.build({"rows": rows, "best": best, "count": b.sub(count, shifted, name="diff")})


FEEDS = {"ids": np.array([[0, 1, 2], [3, 4, 1]], np.int64)}


def test_int64_is_gone_when_the_target_has_none_anywhere():
    g = index_graph()
    before = converter.run(g, FEEDS)

    result = retype(g, target("no_int64"))

    assert int64_operands(g) == []
    assert result.counts["int64_operands_left"] == 0
    assert result.counts["constants"] == 2 and result.counts["ops"] == 6
    assert result.counts["inputs_retyped"] == 1 and result.counts["outputs_retyped"] == 2
    assert g.inputs["ids"].data_type == "int32" and list(g.inputs) == ["ids"]
    assert g.constants["two"].constant.numpy().tolist() == [2]
    assert g.constants["two"].data_type == "int32"
    best = g.outputs["best"].producer
    assert best.attrs["outputDataType"] == "int32"
    assert g.operand("count").producer.attrs["dataType"] == "int32"
    assert any("input 'ids' is int32 now" in n for n in result.notes)
    assert any("output 'best' is int32 now" in n for n in result.notes)
    after = converter.run(g, {"ids": FEEDS["ids"].astype(np.int32)})
    # rows[i, j] = table[2 * ids + 1]: ids 0 -> row 1 = [4, 5, 6, 7]
    assert after["rows"][0, 0].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert after["best"].dtype == np.int32 and after["best"].tolist() == [[3] * 3] * 2
    # count = sum(row) - shifted: row r sums to 16 r + 6
    assert after["count"][0].tolist() == [22 - 1, 54 - 3, 86 - 5]
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


def test_inputs_and_outputs_keep_int64_where_the_target_takes_it_there():
    g = index_graph()
    before = converter.run(g, FEEDS)

    result = retype(g, target("ops_without_int64", io_types=dtypes.SPEC_DATA_TYPES))

    assert result.counts["input_casts"] == 1 and result.counts["output_casts"] == 2
    assert result.counts["inputs_retyped"] == 0 and result.counts["outputs_retyped"] == 0
    # int64 is left only at the boundary: the input, and the two casts back for outputs.
    assert int64_operands(g) == ["best", "diff", "ids"]
    assert g.operations[0].op_type == "cast" and g.operations[0].inputs[0] is g.inputs["ids"]
    for key in ("best", "count"):
        out = g.outputs[key]
        assert out.producer.op_type == "cast" and out.producer.inputs[0].data_type == "int32"
    inside = [op for op in g.operations if op.op_type not in ("cast",)]
    assert all(o.data_type != "int64" for op in inside for o in (*op.inputs, *op.outputs))
    after = converter.run(g, FEEDS)
    for key in before:
        assert after[key].dtype == before[key].dtype, key
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


def test_a_constant_beyond_int32_keeps_its_group_int64():
    b = GraphBuilder("big")
    x = b.input("x", "int64", [2])
    big = b.constant(np.array([2**40, 1], np.int64), name="big")
    small = b.cast(b.input("f", "float32", [2]), "int64", name="small")
    g = b.build({"y": b.add(x, big, name="y"), "z": b.mul(small, small, name="z")})

    result = retype(g, target("no_int64"))

    [note] = [n for n in result.notes if "kept int64" in n]
    assert "constant 'big' has values outside int32" in note
    assert int64_operands(g) == ["big", "x", "y"]  # that group is untouched
    assert g.operand("z").data_type == "int32"  # the other group changed
    feeds = {"x": np.array([5, -6], np.int64), "f": np.array([3.0, -4.0], np.float32)}
    out = converter.run(g, feeds)
    assert out["y"].tolist() == [2**40 + 5, -5] and out["z"].tolist() == [9, 16]


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.mark.parametrize("value, fits", [
    (INT32_MIN, True), (INT32_MAX, True), (INT32_MIN - 1, False), (INT32_MAX + 1, False),
    (-(2**40), False), (2**40, False), (-(2**63), False), (0, True),
])
@pytest.mark.parametrize("form", ["array", "scalar"])
def test_int32_fit_checks_both_bounds(value, fits, form):
    # A constant at either int32 bound converts; one past either bound (large negative ones
    # included) keeps its group int64, and the numbers are the same as before the pass.
    b = GraphBuilder("bounds")
    x = b.input("x", "int64", [2])
    c = b.constant(np.array([value, 1], np.int64), name="c") if form == "array" \
        else b.constant("int64", value, name="c")
    g = b.build({"y": b.add(x, c, name="y")})
    # sums stay inside int32 where the constant does (run-time values are assumed to fit)
    feeds = {"x": np.array([0, 1 if value < 0 else -1], np.int64)}
    before = converter.run(g, feeds)

    result = retype(g, target("ops_without_int64", io_types=dtypes.SPEC_DATA_TYPES))

    if fits:  # int64 only at the boundary: the input, and the cast back for the output
        assert int64_operands(g) == ["x", "y"]
        assert g.operand("c").data_type == "int32"
        assert [n for n in result.notes if "kept int64" in n] == []
    else:
        assert int64_operands(g) == ["c", "x", "y"]
        [note] = [n for n in result.notes if "kept int64" in n]
        assert "constant 'c' has values outside int32" in note
    after = converter.run(g, feeds)
    assert after["y"].dtype == np.int64
    np.testing.assert_array_equal(after["y"], before["y"])


@pytest.mark.parametrize("value, fits", [(INT32_MIN, True), (INT32_MIN - 1, False),
                                         (INT32_MAX, True), (INT32_MAX + 1, False)])
def test_pad_value_fit_checks_both_bounds(value, fits):
    b = GraphBuilder("pad")
    x = b.input("x", "int64", [2])
    g = b.build({"y": b.pad(x, [1], [1], mode="constant", value=value, name="y")})
    before = converter.run(g, {"x": np.array([3, -4], np.int64)})

    result = retype(g, target("ops_without_int64", io_types=dtypes.SPEC_DATA_TYPES))

    inside = [op for op in g.operations if op.op_type == "pad"]
    assert (inside[0].outputs[0].data_type == "int32") == fits
    notes = [n for n in result.notes if "kept int64" in n]
    assert bool(notes) == (not fits)
    if not fits:
        assert f"pads with {value}, outside int32" in notes[0]
    after = converter.run(g, {"x": np.array([3, -4], np.int64)})
    np.testing.assert_array_equal(after["y"], before["y"])
    assert after["y"].tolist() == [value, 3, -4, value]


def test_a_target_with_int64_changes_nothing():
    g = index_graph()
    text = dumps(g)

    result = retype(g, target("all", op_types=dtypes.SPEC_DATA_TYPES,
                              io_types=dtypes.SPEC_DATA_TYPES))

    assert not result.changed and dumps(g) == text
    assert result.counts["int64_operands_left"] == len(int64_operands(g)) == 8


def test_other_unsupported_types_are_noted_not_changed():
    b = GraphBuilder("half")
    x = b.input("x", "float16", [4])
    g = b.build({"y": b.relu(b.sqrt(x))})
    text = dumps(g)

    result = retype(g, target("no_f16", drop=("float16",)))

    assert not result.changed and dumps(g) == text
    assert result.notes == [
        "relu input is float16 in 1 op(s) (relu); target 'no_f16' does not take float16 there",
        "relu output is float16 in 1 op(s) (relu); target 'no_f16' does not take float16 "
        "there",
        "sqrt input is float16 in 1 op(s) (sqrt); target 'no_f16' does not take float16 there",
        "sqrt output is float16 in 1 op(s) (sqrt); target 'no_f16' does not take float16 "
        "there",
    ]


def test_without_a_target_nothing_is_checked():
    g = index_graph()
    text = dumps(g)
    result = retype(g, None)
    assert not result.changed and dumps(g) == text and "no target" in result.notes[0]


def _onnx_index_model(path):
    """Gather by int64 ids, shape arithmetic (Shape, Slice, Concat, Reshape), an int64 ArgMax
    plus an int64 constant, int64 products."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"]),
        helper.make_node("Shape", ["emb"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "one"], ["lead"]),
        helper.make_node("Concat", ["lead", "minus_one"], ["new_shape"], axis=0),
        helper.make_node("Reshape", ["emb", "new_shape"], ["flat"]),
        helper.make_node("ArgMax", ["flat"], ["best"], axis=1, keepdims=0),
        helper.make_node("Add", ["best", "offsets"], ["best_plus"]),
        helper.make_node("Mul", ["ids", "ids"], ["squares"]),
    ]
    table = np.arange(40, dtype=np.float32).reshape(10, 4) * np.array([1, -1, 1, -1], np.float32)
    initializers = [numpy_helper.from_array(v, n) for n, v in (
        ("table", table), ("zero", np.array([0], np.int64)), ("one", np.array([1], np.int64)),
        ("minus_one", np.array([-1], np.int64)), ("offsets", np.array([7, 8], np.int64)))]
    graph = helper.make_graph(
        nodes, "indices", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("best_plus", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("squares", TensorProto.INT64, [2, 3])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)


def test_an_imported_onnx_model_loses_its_int64_and_matches_onnx_runtime(tmp_path):
    import onnxruntime as ort

    path = tmp_path / "indices.onnx"
    _onnx_index_model(path)
    g = converter.load(path)
    assert int64_operands(g)  # the importer keeps ONNX's int64

    results = run_passes(g, ["fold_constants", "cleanup", "data_types", "fold_constants",
                             "cleanup"], PassContext(target=target("no_int64")))

    assert int64_operands(g) == []
    assert dict(results)["data_types"].counts["int64_operands_left"] == 0
    ids = np.array([[9, 0, 3], [2, 2, 5]], np.int64)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = dict(zip(["best_plus", "squares"], session.run(None, {"ids": ids})))
    got = converter.run(g, {"ids": ids.astype(np.int32)})
    # table row r is [4r, -(4r + 1), 4r + 2, -(4r + 3)]. flat row 0 joins rows 9, 0, 3:
    # the largest is 38, at 2. Row 1 joins rows 2, 2, 5: the largest is 22, at 10.
    assert got["best_plus"].tolist() == [2 + 7, 10 + 8] == want["best_plus"].tolist()
    np.testing.assert_array_equal(got["squares"], want["squares"])


# -- the pass's bookkeeping, each case checked on the graph it leaves ---------------------------
ALL_TYPES = list(dtypes.SPEC_DATA_TYPES)


def test_int64_only_at_the_graph_interface_is_still_converted():
    # Every op takes int64; only graph inputs and outputs may not: the pass must still run.
    g = index_graph()
    result = retype(g, target("io_without_int64", op_types=ALL_TYPES, io_types=NO_INT64))
    assert result.changed and int64_operands(g) == []
    assert result.counts["inputs_retyped"] == 1


def test_where_with_a_uint8_condition_converts_its_int64_values():
    # The condition is not in the int64 group: it keeps uint8 in the int32 check.
    b = GraphBuilder("w")
    cond = b.input("cond", "uint8", [3])
    a = b.input("a", "int64", [3])
    g = b.build({"y": b.where(cond, a, b.constant(np.array([7, 8, 9], np.int64), name="k"),
                              name="y")})
    feeds = {"cond": np.array([1, 0, 1], np.uint8), "a": np.array([1, 2, 3], np.int64)}
    before = converter.run(g, feeds)
    result = retype(g, target("ops_without_int64", io_types=ALL_TYPES))
    assert [n for n in result.notes if "kept int64" in n] == []
    assert g.operand("k").data_type == "int32"
    np.testing.assert_array_equal(converter.run(g, feeds)["y"], before["y"])


def test_notes_name_at_most_five_operands_and_count_the_ops():
    b = GraphBuilder("many")
    x = b.input("x", "int64", [2])
    big = b.constant(np.array([2**40, 1], np.int64), name="big")
    y = x
    for i in range(6):
        y = b.add(y, big, name=f"s{i}")
    g = b.build({"y": y})
    [note] = [n for n in retype(g, target("no_int64")).notes if "kept int64" in n]
    assert "for 8 operand(s) (big, s0, s1, s2, s3)" in note

    g = index_graph()
    result = retype(g, target("no_int64"))
    assert f"{result.counts['ops']} op(s) now compute in int32" in " ".join(result.notes)
    assert result.counts["ops"] > 0


def test_a_retyped_input_keeps_its_place_among_the_inputs():
    b = GraphBuilder("order")
    ids = b.input("ids", "int64", [2])
    f = b.input("f", "float32", [2])
    g = b.build({"y": b.cast(ids, "float32", name="y"), "z": b.relu(f, name="z")})
    retype(g, target("no_int64"))
    assert list(g.inputs) == ["ids", "f"] and g.inputs["ids"].data_type == "int32"


def test_an_output_read_inside_the_graph_gives_its_readers_the_int32_value():
    b = GraphBuilder("inner")
    x = b.input("x", "int64", [2])
    y = b.add(x, b.constant(np.array([1, 2], np.int64), name="c"), name="y")
    g = b.build({"y": y, "z": b.mul(y, y, name="z")})
    feeds = {"x": np.array([3, -4], np.int64)}
    before = converter.run(g, feeds)
    retype(g, target("ops_without_int64", io_types=ALL_TYPES))
    mul = next(op for op in g.operations if op.op_type == "mul")
    assert all(o.data_type == "int32" for o in mul.inputs)
    assert mul.inputs[0].producer.op_type == "add"
    after = converter.run(g, feeds)
    for key in before:
        np.testing.assert_array_equal(after[key], before[key])


def test_kept_int64_is_not_reported_again_as_another_unsupported_type():
    b = GraphBuilder("big")
    x = b.input("x", "int64", [2])
    g = b.build({"y": b.add(x, b.constant(np.array([2**40, 1], np.int64), name="big"))})
    notes = retype(g, target("no_int64")).notes
    assert any("kept int64" in n for n in notes)
    assert not any("does not take int64" in n for n in notes)


def test_int64_inside_a_graph_whose_interface_has_none_stays_where_ops_take_it():
    b = GraphBuilder("inside")
    f = b.input("f", "float32", [2])
    i = b.cast(f, "int64", name="i")
    g = b.build({"y": b.cast(b.add(i, i, name="s"), "float32", name="y")})
    result = retype(g, target("io_without_int64", op_types=ALL_TYPES, io_types=NO_INT64))
    assert not result.changed and int64_operands(g) == ["i", "s"]


def test_an_op_the_target_lacks_gets_no_data_type_note():
    b = GraphBuilder("missing")
    x = b.input("x", "float16", [3])
    g = b.build({"y": b.relu(b.abs(x, name="a"), name="r")})
    t = target("no_f16_no_abs", drop=("float16",))
    del t.limits["abs"]

    result = retype(g, t)

    assert result.notes == [
        "relu input is float16 in 1 op(s) (r); target 'no_f16_no_abs' does not take float16 "
        "there",
        "relu output is float16 in 1 op(s) (r); target 'no_f16_no_abs' does not take float16 "
        "there",
    ]
    x_val = np.array([-1.5, 0.0, 2.25], np.float16)
    np.testing.assert_array_equal(converter.run(g, {"x": x_val})["y"], np.abs(x_val))
