"""pad_modes: a pad in a mode the target refuses (chromium-litert: edge) becomes one gather per
padded axis with constant indices. The sweep runs the rewritten graph on ONNX Runtime and
compares it with numpy.pad in the matching mode (edge -> "edge", reflection -> "reflect"), an
oracle independent of the converter, over ranks 1 to 5 and paddings of 0, 1 and more on each
side."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.lowering.onnx.executor import run_on_ort
from converter.passes import PassContext, run_passes
from converter.passes.decompose import CannotExpand
from converter.passes.pad_modes import pad_indices
from converter.targets import Target, load_target
from converter.targets.check import check

LITERT = load_target("chromium-litert")
NUMPY_MODE = {"edge": "edge", "reflection": "reflect"}


def _refusing(*modes: str) -> Target:
    """chromium-litert, refusing `modes` of pad."""
    return Target("refusing", LITERT.limits, refused_options={"pad": {"mode": list(modes)}})


def _pad_graph(shape, begin, end, mode, data_type="float32"):
    b = GraphBuilder("g")
    x = b.input("x", data_type, list(shape))
    return b.build({"y": b.pad(x, list(begin), list(end), mode=mode, name="pad")})


def _feed(shape, data_type, seed=0):
    rng = np.random.default_rng(seed)
    if data_type.startswith("float"):
        return rng.standard_normal(shape).astype(data_type)
    return rng.integers(-100, 100, shape).astype(data_type)


def test_an_edge_pad_becomes_gathers_on_the_padded_axes_only():
    graph = _pad_graph([1, 3, 4, 5], [0, 0, 2, 0], [0, 0, 1, 3], "edge")
    [v] = check(graph, LITERT)
    assert (v.kind, v.node, v.found, v.advice) == ("option", "pad", "mode 'edge'",
                                                   "pad-as-gathers")
    assert v.line() == ("chromium-litert: pad 'pad': mode 'edge'; chromium-litert refuses pad "
                        "with mode 'edge'; fix: the 'pad_modes' pass copies the edge rows with "
                        "gathers by constant indices (exact)")

    [(_, result)] = run_passes(graph, ["pad_modes"], PassContext(target=LITERT))

    assert result.changed and result.counts == {"edge pads as gathers": 1, "gathers added": 2}
    gathers = graph.operations
    assert [(op.op_type, op.attr("axis")) for op in gathers] == [("gather", 2), ("gather", 3)]
    indices = [op.input("indices") for op in gathers]
    assert [i.data_type for i in indices] == ["int32", "int32"]
    assert indices[0].constant.numpy().tolist() == [0, 0, 0, 1, 2, 3, 3]
    assert indices[1].constant.numpy().tolist() == [0, 1, 2, 3, 4, 4, 4, 4]
    assert graph.outputs["y"].shape == (1, 3, 7, 8)
    assert check(graph, LITERT) == []


def test_reflection_pads_stay_where_the_target_takes_them():
    # Chromium 153 builds reflection pads (tests/browser/test_rewrites_in_chromium.py)
    graph = _pad_graph([3, 4], [2, 1], [1, 3], "reflection")
    assert check(graph, LITERT) == []
    [(_, result)] = run_passes(graph, ["pad_modes"], PassContext(target=LITERT))
    assert not result.changed and [op.op_type for op in graph.operations] == ["pad"]


def test_without_a_target_or_a_refused_mode_nothing_changes():
    graph = _pad_graph([3, 4], [1, 1], [1, 1], "edge")
    [(_, result)] = run_passes(graph, ["pad_modes"], PassContext())
    assert not result.changed
    [(_, result)] = run_passes(graph, ["pad_modes"], PassContext(target=load_target("portable")))
    assert not result.changed and [op.op_type for op in graph.operations] == ["pad"]


def test_a_pad_whose_gathers_do_not_fit_stays_with_a_note():
    limits = {**LITERT.limits, "gather": {
        **LITERT.limits["gather"], "input": {"dataTypes": ["int32"]},
        "output": {"dataTypes": ["int32"]}}}
    target = Target("no-float-gather", limits, refused_options={"pad": {"mode": ["edge"]}})
    graph = _pad_graph([3, 4], [1, 0], [0, 2], "edge")
    [(_, result)] = run_passes(graph, ["pad_modes"], PassContext(target=target))
    assert not result.changed and [op.op_type for op in graph.operations] == ["pad"]
    assert result.notes == ["pad 'pad' stays in edge mode, which no-float-gather refuses: its "
                            "replacement needs gather, and there is no decomposition of gather"]
    assert not graph.constants  # the undone replacement leaves no index constant behind
    [v] = check(graph, target)
    assert v.advice == "option-stays" and v.fix.startswith("no pass rewrites this pad (")


def test_index_lists_per_mode():
    assert pad_indices(4, 3, 2, "edge") == [0, 0, 0, 0, 1, 2, 3, 3, 3]
    assert pad_indices(4, 3, 2, "reflection") == [3, 2, 1, 0, 1, 2, 3, 2, 1]
    assert pad_indices(1, 2, 2, "edge") == [0, 0, 0, 0, 0]
    with pytest.raises(CannotExpand):
        pad_indices(0, 1, 0, "edge")
    with pytest.raises(CannotExpand):
        pad_indices(3, 3, 0, "reflection")
    with pytest.raises(CannotExpand):
        pad_indices(3, 1, 1, "constant")


def _paddings(rank: int):
    """Three (begin, end) per rank: zeros on some axes, more than 1 on others, one-sided."""
    cycle = [(0, 0), (1, 3), (3, 1), (0, 2), (2, 0), (3, 3)]
    return [tuple(zip(*[cycle[(axis + shift) % len(cycle)] for axis in range(rank)]))
            for shift in (0, 2, 4)]


CASES = [(mode, rank, begin, end) for mode in ("edge", "reflection") for rank in range(1, 6)
         for begin, end in _paddings(rank)]


@pytest.mark.parametrize("mode,rank,begin,end", CASES,
                         ids=[f"{m}-r{r}-{'_'.join(map(str, b))}-{'_'.join(map(str, e))}"
                              for m, r, b, e in CASES])
def test_sweep_gathers_compute_numpy_pad(mode, rank, begin, end):
    # every axis 4 long (reflection pads up to 3), the last one 5 to tell axes apart
    shape = [4] * (rank - 1) + [5]
    data_type = "int32" if rank % 2 else "float32"
    graph = _pad_graph(shape, begin, end, mode, data_type)
    x = _feed(shape, data_type, seed=rank)
    want = np.pad(x, list(zip(begin, end)), mode=NUMPY_MODE[mode])
    np.testing.assert_array_equal(run_on_ort(graph, {"x": x})["y"], want)  # the source

    [(_, result)] = run_passes(graph, ["pad_modes"], PassContext(target=_refusing(mode)))

    padded_axes = sum(1 for b, e in zip(begin, end) if b or e)
    assert result.changed and result.counts["gathers added"] == padded_axes
    assert {op.op_type for op in graph.operations} == ({"gather"} if padded_axes
                                                       else {"identity"})
    got = run_on_ort(graph, {"x": x})["y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("data_type", ["int8", "uint8", "int64", "float16"])
def test_edge_pads_of_other_types_are_exact(data_type):
    shape, begin, end = [2, 3, 4], [1, 0, 2], [2, 1, 0]
    graph = _pad_graph(shape, begin, end, "edge", data_type)
    x = _feed(shape, "float32" if data_type == "float16" else data_type).astype(data_type)
    run_passes(graph, ["pad_modes"], PassContext(target=LITERT))
    assert {op.op_type for op in graph.operations} == {"gather"}
    np.testing.assert_array_equal(run_on_ort(graph, {"x": x})["y"],
                                  np.pad(x, list(zip(begin, end)), mode="edge"))


def test_all_zero_padding_becomes_an_identity():
    graph = _pad_graph([2, 3], [0, 0], [0, 0], "edge")
    run_passes(graph, ["pad_modes"], PassContext(target=LITERT))
    assert [op.op_type for op in graph.operations] == ["identity"]
    x = _feed([2, 3], "float32")
    np.testing.assert_array_equal(run_on_ort(graph, {"x": x})["y"], x)


def conv_edge_pad_model():
    """An ONNX conv -> Pad(mode=edge) -> relu -> conv (a replication-padded CNN block), and a
    feed for it."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Pad", ["a", "pads"], ["b"], mode="edge"),
             helper.make_node("Relu", ["b"], ["c"]),
             helper.make_node("Conv", ["c", "w2"], ["y"])]
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((2, 4, 3, 3)).astype(np.float32), "w2"),
             numpy_helper.from_array(np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64), "pads")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model, {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}


def test_convert_for_chromium_litert_rewrites_an_imported_onnx_edge_pad():
    """The whole pipeline on an ONNX Pad(mode=edge) between convs: it fits chromium-litert
    afterwards (the layout pass moves the gathers' axes to channels-last with the convs) and
    computes what ONNX Runtime computes on the source model."""
    from converter.targets.pipeline import convert_for_target
    from tests.importers.onnx.helpers import imported, ort_outputs

    model, feeds = conv_edge_pad_model()
    graph, _ = imported(model, feeds)
    assert [v.kind for v in check(graph, LITERT)] == ["option"]
    report = convert_for_target(graph, LITERT)
    assert report.passed and dict(report.passes)["pad_modes"].changed
    assert [(op.op_type, op.attrs.get("axis")) for op in graph.operations
            if op.op_type == "gather"] == [("gather", 1), ("gather", 2)]  # NHWC's H and W
    [want] = ort_outputs(model, feeds)
    np.testing.assert_allclose(run_on_ort(graph, feeds)["y"], want, rtol=1e-5, atol=1e-4)
