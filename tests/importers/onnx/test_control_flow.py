"""ONNX control flow imported without control flow: If with a condition known at conversion
time (at any nesting depth) keeps one branch, with a run-time condition both plus `where`;
Loop and Scan with static trip counts unrolled. Each model also runs on ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model

from .helpers import ort_outputs, ops_of

F32, I64, BOOL = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.BOOL


def _vi(name, elem=F32, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def _const_node(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value))


def _model(nodes, inputs, outputs, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


def _import(model, feeds, known=None):
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return import_model(copy, input_shapes={k: v.shape for k, v in feeds.items()},
                        known_inputs=known or {})


def _run_both(model, feeds, known=None):
    graph = _import(model, feeds, known)
    got = run(graph, feeds)
    want = ort_outputs(model, {**feeds, **(known or {})})
    for vi, w in zip(model.graph.output, want):
        np.testing.assert_allclose(got[vi.name], w, rtol=1e-5, atol=1e-6)
    return graph, [got[vi.name] for vi in model.graph.output]


def _branch(name, nodes, out):
    return helper.make_graph(nodes, name, [], [_vi(out, F32, [3])])


def _nested_if():
    """sr == 16000 ? (mode > 0 ? x * 2 : x + 1) : x - 5, the shape of a voice-activity model
    whose sample-rate If holds another If."""
    inner = helper.make_node(
        "If", ["mode_pos"], ["inner_y"],
        then_branch=_branch("t2", [helper.make_node("Mul", ["x", "two"], ["a"])], "a"),
        else_branch=_branch("e2", [helper.make_node("Add", ["x", "one"], ["b"])], "b"))
    then = helper.make_graph(
        [_const_node("zero", np.array(0, np.int64)),
         helper.make_node("Greater", ["mode", "zero"], ["mode_pos"]), inner],
        "t1", [], [_vi("inner_y", F32, [3])])
    other = _branch("e1", [helper.make_node("Sub", ["x", "five"], ["c"])], "c")
    nodes = [_const_node("rate", np.array(16000, np.int64)),
             _const_node("two", np.array(2, np.float32)),
             _const_node("one", np.array(1, np.float32)),
             _const_node("five", np.array(5, np.float32)),
             helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=then, else_branch=other)]
    return _model(nodes, [_vi("x", F32, [3]), _vi("sr", I64, []), _vi("mode", I64, [])],
                  [_vi("y", F32, [3])])


@pytest.mark.parametrize("sr, mode, want", [(16000, 1, [2, 4, 6]), (16000, 0, [2, 3, 4]),
                                            (8000, 1, [-4, -3, -2])])
def test_nested_if_with_known_conditions_keeps_one_branch_at_each_depth(sr, mode, want):
    model = _nested_if()
    x = np.array([1, 2, 3], np.float32)
    known = {"sr": np.array(sr, np.int64), "mode": np.array(mode, np.int64)}
    graph, (y,) = _run_both(model, {"x": x}, known)
    np.testing.assert_array_equal(y, want)
    assert "where" not in ops_of(graph)
    assert len(graph.operations) == 1  # the one arithmetic op of the chosen branch


def test_if_with_run_time_condition_imports_both_branches_and_where():
    model = _nested_if()
    x = np.array([1, 2, 3], np.float32)
    graph = _import(model, {"x": x, "mode": np.array(1, np.int64)},
                    {"sr": np.array(16000, np.int64)})
    assert ops_of(graph).count("where") == 1
    for mode, want in ((3, [2, 4, 6]), (-1, [2, 3, 4])):
        feeds = {"x": x, "mode": np.array(mode, np.int64)}
        np.testing.assert_array_equal(run(graph, feeds)["y"], want)
        np.testing.assert_array_equal(
            ort_outputs(model, {**feeds, "sr": np.array(16000, np.int64)})[0], want)


def test_if_with_run_time_condition_and_different_shapes_asks_for_the_condition():
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["a"])], "t", [],
                             [_vi("a", F32, None)])
    other = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["b"], axis=0)], "e", [],
                              [_vi("b", F32, None)])
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                   [_vi("x", F32, [2]), _vi("c", BOOL, [])], [_vi("y", F32, None)])
    with pytest.raises(UnsupportedError) as info:
        _import(model, {"x": np.zeros(2, np.float32), "c": np.array(True)})
    assert "differs between branches" in str(info.value.items)
    assert info.value.needs_known == ["c"]


def _loop_model(trips: int, cond_from_counter: bool = False):
    """Carried s <- s + x * i; scan output s each iteration."""
    body_nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F32),
                  helper.make_node("Mul", ["x", "fi"], ["xi"]),
                  helper.make_node("Add", ["s_in", "xi"], ["s_out"]),
                  helper.make_node("Identity", ["s_out"], ["scan"])]
    if cond_from_counter:  # keep going while i < 2
        body_nodes += [_const_node("stop", np.array(2, np.int64)),
                       helper.make_node("Less", ["i", "stop"], ["c_out"])]
    else:
        body_nodes.append(helper.make_node("Identity", ["c_in"], ["c_out"]))
    body = helper.make_graph(body_nodes, "body",
                             [_vi("i", I64, []), _vi("c_in", BOOL, []), _vi("s_in", F32, [2])],
                             [_vi("c_out", BOOL, []), _vi("s_out", F32, [2]),
                              _vi("scan", F32, [2])])
    nodes = [_const_node("M", np.array(trips, np.int64)), _const_node("go", np.array(True)),
             helper.make_node("Loop", ["M", "go", "s0"], ["s_final", "all"], body=body)]
    return _model(nodes, [_vi("x", F32, [2]), _vi("s0", F32, [2])],
                  [_vi("s_final", F32, [2]), _vi("all", F32, [None, 2])])


def test_loop_with_a_static_trip_count_is_unrolled():
    x, s0 = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    graph, (final, scans) = _run_both(_loop_model(4), {"x": x, "s0": s0})
    # s after i = 0..3: s0 + x * (0 + 1 + 2 + 3)
    np.testing.assert_array_equal(final, s0 + 6 * x)
    assert scans.shape == (4, 2)
    np.testing.assert_array_equal(scans[1], s0 + x)


def test_loop_stops_when_its_known_condition_turns_false():
    x, s0 = np.array([1, 2], np.float32), np.array([0, 0], np.float32)
    _, (final, scans) = _run_both(_loop_model(10, cond_from_counter=True), {"x": x, "s0": s0})
    # iterations i = 0, 1, 2 run (the condition computed at i = 2 ends the loop)
    assert scans.shape == (3, 2)
    np.testing.assert_array_equal(final, 3 * x)


def test_loop_past_the_unrolling_limit_says_so():
    from converter.importers.onnx.rules import control_flow

    x, s0 = np.zeros(2, np.float32), np.zeros(2, np.float32)
    with pytest.raises(UnsupportedError) as info:
        _import(_loop_model(control_flow.MAX_UNROLLED_NODES), {"x": x, "s0": s0})
    assert "limit" in str(info.value.items)


def test_scan_reverse_direction_on_axis_1_matches_onnx_runtime():
    # running sum over the sequence axis 1, scanned back to front; outputs stacked on axis 0
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "item"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["each"])], "body",
        [_vi("acc", F32, [2]), _vi("item", F32, [2])],
        [_vi("acc_out", F32, [2]), _vi("each", F32, [2])])
    node = helper.make_node("Scan", ["init", "seq"], ["total", "partial"], body=body,
                            num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=[1])
    model = _model([node], [_vi("init", F32, [2]), _vi("seq", F32, [2, 4])],
                   [_vi("total", F32, [2]), _vi("partial", F32, [4, 2])], opset=16)
    seq = np.arange(8, dtype=np.float32).reshape(2, 4)
    init = np.array([100, 200], np.float32)
    _, (total, partial) = _run_both(model, {"init": init, "seq": seq})
    np.testing.assert_array_equal(total, init + seq.sum(axis=1))
    np.testing.assert_array_equal(partial[0], init + seq[:, 3])  # the last item comes first
