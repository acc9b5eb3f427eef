"""split_constants: a constant over the target's maxConstantByteLength (chromium-litert: 128
MiB, where build() says "Buffer size is over inline limit") becomes pieces under it joined by
concat. Small limits here stand for the 128 MiB one (tests/targets/test_check_after_passes.py
and tests/browser/test_rewrites_in_chromium.py take the real one): the rewritten graph runs on
ONNX Runtime and gives exactly what the constant held."""
from __future__ import annotations

import numpy as np
import pytest

from converter.builder import GraphBuilder
from converter.ir import ConstantData
from converter.lowering.onnx.executor import run_on_ort
from converter.passes import PassContext, run_passes
from converter.passes.split_constants import plan_pieces
from converter.targets import Target, load_target
from converter.targets.check import check
from converter.targets.pipeline import check_after_passes, convert_for_target

LITERT = load_target("chromium-litert")


def _limited(limit: int, limits: dict | None = None) -> Target:
    return Target("small", limits or LITERT.limits, max_constant_bytes=limit)


def _add_graph(value: np.ndarray | ConstantData):
    """y = x + w, w the constant under test."""
    b = GraphBuilder("g")
    data = value if isinstance(value, ConstantData) else ConstantData(
        str(value.dtype), value.shape, array=value)
    x = b.input("x", data.data_type, list(data.shape))
    w = b.graph.add_constant("w", data)
    return b.build({"y": b.add(x, w, name="sum")})


def _pieces(graph):
    return sorted((c.shape, c.constant.nbytes) for c in graph.constants.values())


def test_a_constant_over_the_limit_becomes_blocks_of_rows_joined_by_concat():
    w = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    graph = _add_graph(w)
    target = _limited(256)
    [v] = [v for v in check(graph, target) if v.kind == "tensor-size"]
    assert (v.tensor, v.advice, v.found) == ("w", "split-constant", "1024 bytes")
    assert v.fix == ("the 'split_constants' pass cuts it into constants of at most 256 bytes "
                     "joined by concat (exact)")

    [(_, result)] = run_passes(graph, ["split_constants"], PassContext(target=target))

    assert result.changed and result.counts == {"constants split": 1, "pieces": 4}
    assert _pieces(graph) == [((4, 16), 256)] * 4
    concat, add = graph.operations
    assert (concat.op_type, concat.attr("axis"), concat.output.name) == ("concat", 0, "w")
    assert add.inputs[1] is concat.output
    assert check(graph, target) == []
    x = np.ones((16, 16), np.float32)
    np.testing.assert_array_equal(run_on_ort(graph, {"x": x})["y"], x + w)


@pytest.mark.parametrize("shape,limit,pieces", [
    ((2, 100), 256, [((1, 36), 144)] * 2 + [((1, 64), 256)] * 2),   # a row is over: nested
    ((1, 1, 300), 400, [((1, 1, 100), 400)] * 3),                     # leading axes of 1
    ((5, 3), 24, [((1, 3), 12)] + [((2, 3), 24)] * 2),                 # a last, shorter block
])
def test_pieces_along_the_first_axis_that_cuts(shape, limit, pieces):
    w = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    graph = _add_graph(w)
    [(_, result)] = run_passes(graph, ["split_constants"], PassContext(target=_limited(limit)))
    assert result.changed and result.counts["pieces"] == len(pieces)
    assert _pieces(graph) == pieces
    assert all(size <= limit for _, size in _pieces(graph))
    x = np.zeros(shape, np.float32)
    np.testing.assert_array_equal(run_on_ort(graph, {"x": x})["y"], w)


def test_a_uniform_constant_is_split_into_fills():
    graph = _add_graph(ConstantData("float32", (8, 8), fill=2.5))
    run_passes(graph, ["split_constants"], PassContext(target=_limited(64)))
    assert {c.constant.fill for c in graph.constants.values()} == {2.5}
    assert len(graph.constants) == 4
    np.testing.assert_array_equal(run_on_ort(graph, {"x": np.zeros((8, 8), np.float32)})["y"],
                                  np.full((8, 8), 2.5, np.float32))


@pytest.mark.parametrize("data_type", ["int8", "uint8", "int32", "int64", "float16"])
def test_other_types_are_split_exactly(data_type):
    w = (np.arange(6 * 10) % 97 - 40).reshape(6, 10).astype(data_type)
    graph = _add_graph(w)
    limit = 2 * 10 * w.itemsize
    run_passes(graph, ["split_constants"], PassContext(target=_limited(limit)))
    assert len(graph.constants) == 3
    np.testing.assert_array_equal(run_on_ort(graph, {"x": np.zeros_like(w)})["y"], w)


def test_int4_constants_stay_whole_as_webnn_has_no_int4_concat():
    """chromium-litert lists int4 for concat, but the spec's concat takes no int4 (its
    opSupportLimits() says more than build() can be asked through the spec's API): such a
    constant stays, and check says why."""
    from converter.ir.operand import pack4

    values = (np.arange(4 * 7) % 16 - 8).astype(np.int8).reshape(4, 7)
    b = GraphBuilder("g")
    w = b.graph.add_constant("w", ConstantData("int4", (4, 7), array=pack4(values)))
    scale = b.constant(np.full((1, 1), 0.5, np.float32))
    zero = b.graph.add_constant("zp", ConstantData("int4", (1, 1), array=pack4(np.zeros(1))))
    graph = b.build({"y": b.dequantizeLinear(w, scale, zero, name="dq")})
    [(_, result)] = run_passes(graph, ["split_constants"], PassContext(target=_limited(8)))
    assert not result.changed and result.notes[0].startswith(
        "constant 'w' stays over 8 bytes: WebNN's concat takes no int4 at rank 2")
    [v] = [v for v in check(graph, _limited(8)) if v.kind == "tensor-size"]
    assert v.advice == "too-big" and v.fix.startswith(
        "no pass splits this constant (WebNN's concat takes no int4 at rank 2): ")


def test_constants_that_cannot_be_split_stay_with_a_note_and_check_says_why():
    w = np.ones((4, 4), np.float32)
    graph = _add_graph(w)
    [(_, result)] = run_passes(graph, ["split_constants"], PassContext(target=_limited(2)))
    assert not result.changed
    assert result.notes == ["constant 'w' stays over 2 bytes: one element is over 2 bytes"]
    no_concat = {k: v for k, v in LITERT.limits.items() if k != "concat"}
    [v] = [v for v in check(graph, _limited(16, no_concat)) if v.kind == "tensor-size"]
    assert v.advice == "too-big"
    assert v.fix.startswith("no pass splits this constant (small has no concat to join the "
                            "pieces)")


def test_plan_pieces_fits_cuts_or_gives_up():
    assert plan_pieces("float32", (4, 4), 64) is None
    assert plan_pieces("float32", (4, 4), 2) == "impossible"
    assert plan_pieces("float32", (4, 4), 32) == (0, [(0, 2, None), (2, 2, None)])


def test_the_pipeline_splits_last_so_folding_does_not_join_the_pieces_again():
    """convert --target runs fold_constants late; a concat of constants would fold back into
    one constant over the limit. Here a fold itself makes the big constant (w + w)."""
    b = GraphBuilder("g")
    x = b.input("x", "float32", [8, 8])
    w = b.constant(np.arange(64, dtype=np.float32).reshape(8, 8), name="w")
    graph = b.build({"y": b.add(x, b.add(w, w, name="twice"), name="sum")})
    target = _limited(64)
    report = check_after_passes(graph, target)
    assert report.passed and dict(report.passes)["split_constants"].changed
    assert all(c.constant.nbytes <= 64 for c in graph.constants.values())
    np.testing.assert_array_equal(run_on_ort(graph, {"x": np.zeros((8, 8), np.float32)})["y"],
                                  2 * np.arange(64, dtype=np.float32).reshape(8, 8))
    again = _add_graph(np.ones((8, 8), np.float32))
    assert convert_for_target(again, target).passed


def test_a_constant_the_reader_needs_constant_stays_whole():
    """chromium-litert's gatherElements takes constant indices only: a concat of pieces is
    computed, so indices over the limit stay, and check says why."""
    b = GraphBuilder("g")
    x = b.input("x", "float32", [4, 8])
    indices = b.constant(np.zeros((4, 8), np.int32), name="idx")
    graph = b.build({"y": b.gatherElements(x, indices, axis=0, name="ge")})
    target = Target("small", LITERT.limits, max_constant_bytes=64,
                    constant_operands={"gatherElements": ["indices"]})
    [(_, result)] = run_passes(graph, ["split_constants"], PassContext(target=target))
    assert not result.changed
    assert result.notes == ["constant 'idx' stays over 64 bytes: small needs gatherElements "
                            "'ge' indices to be a constant"]
    [v] = [v for v in check(graph, target) if v.kind == "tensor-size"]
    assert v.advice == "too-big"
