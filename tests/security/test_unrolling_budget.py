"""Loop and Scan unrolling: one budget of body nodes for the whole model, held against what a
file asks for before the copies are made where it can be (a trip count, a scan's length, a
condition whose nodes can be run at conversion time), copy by copy where it cannot. Each file is
refused by the CLI in a child with bounded memory, with exit code 2 and one line naming it."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from .bounded import refusal
from .onnx_cases import model, vi


def _loops(trips: int, depth: int, *, cond: str = "fixed") -> bytes:
    """`depth` Loops, each in the body of the one before, each running `trips` times on
    y = x + 1, ended by:
      * "fixed": the trip count alone (the condition passed through unchanged);
      * "iteration": the condition i < trips, computed as the loop runs (and the trip count);
      * "counter": a counter it carries, n + 1 < trips, with no trip count;
      * "opaque": the condition |i| < trips, through an op the prediction does not run."""
    from onnx import TensorProto as T, numpy_helper

    def tensor(name, elem, shape):
        return helper.make_tensor_value_info(name, elem, shape)

    def condition(k):
        if cond == "fixed":
            return [helper.make_node("Identity", [f"c{k}"], [f"co{k}"])]
        if cond == "iteration":
            return [helper.make_node("Less", [f"i{k}", f"M{k}"], [f"co{k}"])]
        if cond == "counter":
            return [helper.make_node("Add", [f"n{k}", "one_i"], [f"no{k}"]),
                    helper.make_node("Less", [f"no{k}", f"M{k}"], [f"co{k}"])]
        return [helper.make_node("Abs", [f"i{k}"], [f"m{k}"]),
                helper.make_node("Less", [f"m{k}", f"M{k}"], [f"co{k}"])]

    counter = cond == "counter"

    def loop_node(k, body):  # the Loop running body k
        trip = "" if counter else f"M{k}"
        return helper.make_node("Loop", [trip, "", *(["zero_i"] if counter else []),
                                         f"v{k - 1}" if k else "x"],
                                [*([f"nf{k}"] if counter else []), f"vo{k - 1}" if k else "y"],
                                body=body)

    body = None
    for k in reversed(range(depth)):
        inits = []
        if body is None:
            step = helper.make_node("Add", [f"v{k}", "one"], [f"vo{k}"])
        else:
            step = loop_node(k + 1, body)
            inits.append(numpy_helper.from_array(np.array(trips, np.int64), f"M{k + 1}"))
        carried_in = [tensor(f"n{k}", T.INT64, [])] if counter else []
        carried_out = [tensor(f"no{k}", T.INT64, [])] if counter else []
        body = helper.make_graph(
            [*condition(k), step], f"body{k}",
            [tensor(f"i{k}", T.INT64, []), tensor(f"c{k}", T.BOOL, []), *carried_in,
             tensor(f"v{k}", T.FLOAT, [2])],
            [tensor(f"co{k}", T.BOOL, []), *carried_out, tensor(f"vo{k}", T.FLOAT, [2])],
            inits)
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M0"),
             numpy_helper.from_array(np.ones(2, np.float32), "one"),
             numpy_helper.from_array(np.array(1, np.int64), "one_i"),
             numpy_helper.from_array(np.array(0, np.int64), "zero_i")]
    return model([loop_node(0, body)], [vi("x", shape=[2])], [vi("y", shape=[2])],
                 inits).SerializeToString()


def _convert_refused(tmp_path, data: bytes) -> tuple[Path, str]:
    src = tmp_path / "loops.onnx"
    src.write_bytes(data)
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line.startswith(f"error: {src}: 1 unsupported: Loop 'Loop_0': ")
    return src, line.split("Loop 'Loop_0': ", 1)[1].split("; change or remove")[0]


def test_a_trip_count_past_the_budget_is_refused_before_the_first_copy(tmp_path):
    # Was: 10,000 copies made (15 s) before the limit was reached.
    _, reason = _convert_refused(tmp_path, _loops(10 ** 9, 1, cond="fixed"))
    assert reason == ("its trip count asks for 1000000000 iterations of its 2-node body, past "
                      "the limit of 20000 body nodes imported by unrolling (20000 left of it)")


def test_nested_trip_counts_multiply_against_one_budget(tmp_path):
    # Three loops of 100: 10**6 copies, each loop within its own budget before (559 bytes ran
    # for minutes). Their product is known from the file: refused before any copy.
    _, reason = _convert_refused(tmp_path, _loops(100, 3, cond="fixed"))
    assert reason == ("its trip count asks for 100 iterations of its 2-node body (with what "
                      "its inner loops and branches import, at least 20001 nodes a copy), past "
                      "the limit of 20000 body nodes imported by unrolling (20000 left of it)")


def _loop_around_if(trips: int, then_nodes: int, else_nodes: int, cond_known: bool) -> bytes:
    """A Loop (condition passed through) whose body holds an If, each branch adding 1 to y
    as many times as it has nodes; the If's condition is a constant true (one branch
    imported) or the model's input (both)."""
    from onnx import TensorProto as T, numpy_helper

    def branch(name, nodes):
        adds = [helper.make_node("Add", [f"{name}{k}" if k else "v", "one"],
                                 [f"{name}{k + 1}" if k + 1 < nodes else f"{name}_out"])
                for k in range(nodes)]
        return helper.make_graph(adds, name, [], [vi(f"{name}_out", shape=[2])])

    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("If", ["flag"], ["vo"], then_branch=branch("then", then_nodes),
                          else_branch=branch("else", else_nodes))],
        "body", [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("v", shape=[2])],
        [vi("co", T.BOOL, []), vi("vo", shape=[2])])
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M"),
             numpy_helper.from_array(np.ones(2, np.float32), "one")]
    inputs = [vi("x", shape=[2])]
    if cond_known:
        inits.append(numpy_helper.from_array(np.array(True), "flag"))
    else:
        inputs.append(vi("flag", T.BOOL, []))
    return model([helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)], inputs,
                 [vi("y", shape=[2])], inits).SerializeToString()


def test_branches_inside_a_loop_count_before_the_first_copy(tmp_path):
    # 1,000 copies of a body whose branches have 30 nodes each: 32,000 nodes at the least.
    # Was: each copy counted as its 2 nodes, and all 32,000 were imported.
    _, reason = _convert_refused(tmp_path, _loop_around_if(1000, 30, 30, cond_known=True))
    assert reason == ("its trip count asks for 1000 iterations of its 2-node body (with what "
                      "its inner loops and branches import, at least 32 nodes a copy), past the "
                      "limit of 20000 body nodes imported by unrolling (20000 left of it)")


def test_branches_inside_a_loop_count_in_every_copy_as_it_is_made(tmp_path):
    # The smaller branch has 1 node, so nothing is refused up front; with the condition known
    # only at run time both branches are imported in each copy (2 + 100 + 1 nodes), and the
    # 195th copy's then-branch would pass the budget. Was: all 1,000 copies, 103,000 nodes.
    _, reason = _convert_refused(tmp_path, _loop_around_if(1000, 100, 1, cond_known=False))
    assert reason == ("in its body, If 'If_1': one more copy of its 100-node then_branch would "
                      "take the model past 20000 body nodes imported by unrolling (19984 so "
                      "far; every copy counts, loops inside loops too)")


# What each condition's refusal says: counted up front, or (the prediction cannot run Abs)
# copy by copy. Was, for all: copy by copy, 20,000 nodes imported (5 s) before the refusal.
UP_FRONT = ("its condition runs it for 100 iterations of its {size}-node body (with what its "
            "inner loops and branches import, at least {least} nodes a copy), past the limit "
            "of 20000 body nodes imported by unrolling (20000 left of it)")
COPY_BY_COPY = ("in its body, Loop 'Loop_2': in its body, Loop 'Loop_2': one more copy of "
                "its 3-node body would take the model past 20000 body nodes imported by "
                "unrolling (19998 so far; every copy counts, loops inside loops too)")
REFUSALS = {"iteration": UP_FRONT.format(size=2, least=20001),
            "counter": UP_FRONT.format(size=3, least=20001),
            "opaque": COPY_BY_COPY}


@pytest.mark.parametrize("cond", REFUSALS)
def test_nested_loops_ending_on_their_conditions_are_held_to_the_shared_budget(tmp_path, cond):
    _, reason = _convert_refused(tmp_path, _loops(100, 3, cond=cond))
    assert reason == REFUSALS[cond]


@pytest.mark.parametrize("cond", ["iteration", "counter"])
def test_a_loop_whose_condition_can_be_run_here_is_counted_before_any_fold(tmp_path, cond,
                                                                           monkeypatch):
    """The work before the refusal is bounded by a count: no node of any copy is folded
    or imported (was: 10,000 folds by ONNX's reference evaluator, 9,900 ops emitted)."""
    import converter
    from converter.importers import onnx as onnx_importer

    folds = []
    real = onnx_importer.fold
    monkeypatch.setattr(onnx_importer, "fold", lambda ctx, node: folds.append(node) or
                        real(ctx, node))
    src = tmp_path / "loops.onnx"
    src.write_bytes(_loops(100, 3, cond=cond))
    with pytest.raises(converter.ConverterError, match="its condition runs it for 100 "):
        converter.load(src)
    assert folds == []


@pytest.mark.parametrize("trips, cond", [(10 ** 6, "counter"), (10 ** 9, "iteration")])
def test_a_long_loop_ending_on_its_condition_is_refused_before_it_is_counted_out(tmp_path,
                                                                                  trips, cond):
    # The prediction stops once the body's own nodes pass the budget: 10**9 is never counted.
    _, reason = _convert_refused(tmp_path, _loops(trips, 1, cond=cond))
    size = 2 if cond == "counter" else 1
    most = 20000 // (size + 1)
    assert reason == (f"its condition runs it for more than {most} iterations of its "
                      f"{size + 1}-node body, past the limit of 20000 body nodes imported by "
                      f"unrolling (20000 left of it)")


@pytest.mark.parametrize("cond", ["fixed", "iteration", "counter", "opaque"])
def test_nested_loops_within_the_budget_still_unroll(tmp_path, cond):
    import converter

    src = tmp_path / "loops.onnx"
    src.write_bytes(_loops(10, 3, cond=cond))  # 10 * (2 + 10 * (2 + 10 * 2)) = 2220 nodes, or so
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(converter.run(converter.load(src), {"x": x})["y"], x + 1000)


def test_a_scan_longer_than_what_a_loop_left_of_the_budget_is_refused_up_front(tmp_path):
    """A Loop of 1,000 copies of 2 nodes, then a Scan of 19,000 steps of 1: each fitted its own
    budget before (20,000 copies made); together they pass the model's one budget, and the
    Scan's length, known from its input, is refused before its first copy."""
    from onnx import TensorProto as T
    from onnx import numpy_helper

    scan_body = helper.make_graph([helper.make_node("Add", ["acc", "item"], ["acc_out"])],
                                  "scan_body", [vi("acc", shape=[2]), vi("item", shape=[2])],
                                  [vi("acc_out", shape=[2])])
    loop = onnx.ModelProto()
    loop.ParseFromString(_loops(1000, 1, cond="fixed"))
    graph = loop.graph
    graph.node.append(helper.make_node("Scan", ["y", "seq"], ["total"], body=scan_body,
                                       num_scan_inputs=1))
    graph.input.append(vi("seq", T.FLOAT, [19000, 2]))
    del graph.output[:]
    graph.output.append(vi("total", shape=[2]))
    loop.opset_import[0].version = 16
    src = tmp_path / "scan.onnx"
    src.write_bytes(loop.SerializeToString())
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line.startswith(f"error: {src}: 1 unsupported: Scan 'Scan_1': its scan inputs give "
                           f"19000 iterations of its 1-node body, past the limit of 20000 body "
                           f"nodes imported by unrolling (18000 left of it)")


def test_copies_of_a_body_share_their_evaluators_and_type_inference(tmp_path, monkeypatch):
    """Loops the prediction cannot count are unrolled copy by copy: each copy's folds reuse one
    reference evaluator per node, and one type inference serves all copies of a body. Was: an
    evaluator built for each fold (2,220 here) and an inference per loop run (111)."""
    import onnx.reference

    import converter
    from converter.importers.onnx import folding
    from converter.importers.onnx.rules import control_flow

    built, inferred = [], []
    real_evaluator, real_inferred = onnx.reference.ReferenceEvaluator, control_flow.inferred_types

    def evaluator(*args, **kwargs):
        built.append(1)
        return real_evaluator(*args, **kwargs)

    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", evaluator)
    monkeypatch.setattr(control_flow, "inferred_types",
                        lambda *a: inferred.append(1) or real_inferred(*a))
    monkeypatch.setattr(folding, "_EVALUATORS", OrderedDict(), raising=False)  # none kept yet
    src = tmp_path / "loops.onnx"
    src.write_bytes(_loops(10, 3, cond="opaque"))  # 1,110 copies, each folding Abs and Less
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(converter.run(converter.load(src), {"x": x})["y"], x + 1000)
    assert len(built) == 3  # one per body's Abs (Less is computed by numpy)
    assert len(inferred) == 3  # one per body
