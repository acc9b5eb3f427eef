"""ONNX shape ops imported as WebNN: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
Split, Slice, Pad, Expand, Tile, Trilu, CumSum, Dropout.

Each model is built with onnx.helper, imported, run through our executor, and compared with
values worked out by hand from the ONNX spec; ONNX Runtime runs the same model as a second
witness of those values. The helpers here serve the other importer test modules too.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.errors import FormatError, UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model

F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL
F32 = np.float32


def make(nodes, inputs: dict, outputs: dict, inits: dict | None = None, opset: int = 18,
         ) -> onnx.ModelProto:
    """A model from nodes; inputs {name: (elem type, shape)}, outputs {name: elem type},
    initializers {name: ndarray}."""
    graph = helper.make_graph(
        nodes, "t",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
    # IR version 8 (opsets up to 18), 9 and 10 (up to 21) are what ONNX Runtime reads.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8 if opset <= 18 else 10)


def convert(model: onnx.ModelProto, feeds: dict):
    """(the imported WebNN graph, its outputs run on our executor)."""
    graph = import_model(model, input_shapes={k: v.shape for k, v in feeds.items()})
    ours = {k: (v.view(np.uint8) if v.dtype == np.bool_ else v) for k, v in feeds.items()}
    return graph, run(graph, ours)


def on_ort(model: onnx.ModelProto, feeds: dict) -> dict:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def check(model: onnx.ModelProto, feeds: dict, expected: dict, *, with_ort: bool = True):
    """Our results equal `expected` (hand-computed) in shape and value (float32: atol 1e-4,
    rtol 1e-3), and so do ONNX Runtime's. Returns the imported graph."""
    # ORT first: importing releases the initializers' bytes from the proto.
    theirs = on_ort(model, feeds) if with_ort else None
    graph, ours = convert(model, feeds)
    witnesses = [("ours", ours)] + ([("onnxruntime", theirs)] if with_ort else [])
    for who, got in witnesses:
        for name, want in expected.items():
            have = np.asarray(got[name])
            want = np.asarray(want)
            if have.dtype == np.bool_:
                have = have.view(np.uint8)
            assert have.shape == want.shape, f"{who} {name}: shape {have.shape}, want {want.shape}"
            np.testing.assert_allclose(have.astype(np.float64), want.astype(np.float64),
                                       rtol=1e-3, atol=1e-4, err_msg=f"{who} {name}")
    return graph


def unsupported(model: onnx.ModelProto, feeds: dict) -> str:
    """Import must refuse the model; returns the reasons, joined."""
    with pytest.raises(UnsupportedError) as e:
        import_model(model, input_shapes={k: v.shape for k, v in feeds.items()})
    return " | ".join(e.value.items)


def ops(graph) -> list[str]:
    return [op.op_type for op in graph.operations]


X234 = np.arange(24, dtype=F32).reshape(2, 3, 4)


# -- Reshape, Flatten, Squeeze, Unsqueeze -------------------------------------------------------
def test_reshape_copies_zero_dims_and_infers_minus_one():
    m = make([helper.make_node("Reshape", ["x", "s"], ["y"])], {"x": (F, [2, 3, 4])}, {"y": F},
             {"s": np.array([0, -1], np.int64)})
    g = check(m, {"x": X234}, {"y": X234.reshape(2, 12)})
    assert ops(g) == ["reshape"] and g.operations[0].attrs["newShape"] == [2, 12]


def test_reshape_opset1_shape_attribute_is_below_the_supported_opsets():
    # Reshape-1 took its shape as an attribute; opsets below 7 are refused as a whole (issue 10).
    m = make([helper.make_node("Reshape", ["x"], ["y"], shape=[4, -1])], {"x": (F, [2, 3, 4])},
             {"y": F}, opset=1)
    with pytest.raises(FormatError, match="default-domain opset 1; this converter reads opsets 7 to"):
        import_model(m)


def test_reshape_allowzero_with_a_real_zero_is_refused():
    m = make([helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1)],
             {"x": (F, [2, 3, 4])}, {"y": F}, {"s": np.array([0, 24], np.int64)})
    assert "0 dimension; WebNN has no empty tensors" in unsupported(m, {"x": X234})


def test_reshape_shape_from_a_graph_input_is_refused():
    m = make([helper.make_node("Reshape", ["x", "s"], ["y"])],
             {"x": (F, [2, 3, 4]), "s": (I64, [2])}, {"y": F})
    reason = unsupported(m, {"x": X234, "s": np.array([6, 4], np.int64)})
    assert "the shape input must be known at conversion time" in reason


def test_flatten_negative_axis():
    m = make([helper.make_node("Flatten", ["x"], ["y"], axis=-1)], {"x": (F, [2, 3, 4])},
             {"y": F})
    check(m, {"x": X234}, {"y": X234.reshape(6, 4)})


def test_flatten_axis_0_puts_everything_in_the_second_dimension():
    m = make([helper.make_node("Flatten", ["x"], ["y"], axis=0)], {"x": (F, [2, 3, 4])},
             {"y": F})
    check(m, {"x": X234}, {"y": X234.reshape(1, 24)})


def test_squeeze_without_axes_drops_every_size_1_axis():
    x = np.array([[[1.0], [2.0]]], F32)  # [1, 2, 1]
    m = make([helper.make_node("Squeeze", ["x"], ["y"])], {"x": (F, [1, 2, 1])}, {"y": F})
    check(m, {"x": x}, {"y": [1.0, 2.0]})


def test_squeeze_opset11_negative_axis_attribute():
    x = np.array([[[1.0], [2.0]]], F32)
    m = make([helper.make_node("Squeeze", ["x"], ["y"], axes=[-1])], {"x": (F, [1, 2, 1])},
             {"y": F}, opset=11)
    check(m, {"x": x}, {"y": [[1.0, 2.0]]})


def test_squeeze_of_a_size_3_axis_is_refused():
    m = make([helper.make_node("Squeeze", ["x", "a"], ["y"])], {"x": (F, [2, 3, 4])},
             {"y": F}, {"a": np.array([1], np.int64)})
    assert "axis 1 has size 3" in unsupported(m, {"x": X234})


def test_unsqueeze_counts_negative_axes_in_the_output_rank():
    m = make([helper.make_node("Unsqueeze", ["x", "a"], ["y"])], {"x": (F, [3])}, {"y": F},
             {"a": np.array([-1, 0], np.int64)})
    g = check(m, {"x": np.array([1, 2, 3], F32)}, {"y": [[[1], [2], [3]]]})
    assert g.operations[0].attrs["newShape"] == [1, 3, 1]


def test_unsqueeze_opset11_axes_attribute():
    m = make([helper.make_node("Unsqueeze", ["x"], ["y"], axes=[1])], {"x": (F, [2])},
             {"y": F}, opset=11)
    check(m, {"x": np.array([5, 6], F32)}, {"y": [[5], [6]]})


# -- Transpose, Concat, Split -----------------------------------------------------------------
def test_transpose_default_reverses_axes():
    m = make([helper.make_node("Transpose", ["x"], ["y"])], {"x": (F, [2, 3, 4])}, {"y": F})
    g = check(m, {"x": X234}, {"y": X234.transpose(2, 1, 0)})
    assert g.operations[0].attrs["permutation"] == [2, 1, 0]


def test_transpose_perm():
    x = np.array([[1, 2, 3], [4, 5, 6]], F32)
    m = make([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], {"x": (F, [2, 3])},
             {"y": F})
    check(m, {"x": x}, {"y": [[1, 4], [2, 5], [3, 6]]})


def test_concat_negative_axis_with_an_initializer():
    m = make([helper.make_node("Concat", ["x", "c"], ["y"], axis=-1)], {"x": (F, [2, 1])},
             {"y": F}, {"c": np.array([[7, 8], [9, 10]], F32)})
    check(m, {"x": np.array([[1], [2]], F32)}, {"y": [[1, 7, 8], [2, 9, 10]]})


def test_concat_drops_an_empty_known_input():
    m = make([helper.make_node("Concat", ["x", "e"], ["y"], axis=0)], {"x": (F, [2])},
             {"y": F}, {"e": np.zeros(0, F32)})
    g = check(m, {"x": np.array([1, 2], F32)}, {"y": [1, 2]})
    assert len(g.operations[0].inputs) == 1


def test_split_opset18_num_outputs_gives_the_last_part_the_rest():
    x = np.arange(7, dtype=F32)
    m = make([helper.make_node("Split", ["x"], ["a", "b", "c"], num_outputs=3)],
             {"x": (F, [7])}, {"a": F, "b": F, "c": F})
    g = check(m, {"x": x}, {"a": [0, 1, 2], "b": [3, 4, 5], "c": [6]})
    assert g.operations[0].attrs["splits"] == [3, 3, 1]


def test_split_sizes_input_on_axis_1():
    x = np.arange(6, dtype=F32).reshape(1, 6)
    m = make([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1)], {"x": (F, [1, 6])},
             {"a": F, "b": F}, {"s": np.array([2, 4], np.int64)}, opset=13)
    check(m, {"x": x}, {"a": [[0, 1]], "b": [[2, 3, 4, 5]]})


def test_split_opset11_equal_parts_and_split_attribute():
    x = np.arange(4, dtype=F32)
    even = make([helper.make_node("Split", ["x"], ["a", "b"])], {"x": (F, [4])},
                {"a": F, "b": F}, opset=11)
    check(even, {"x": x}, {"a": [0, 1], "b": [2, 3]})
    sized = make([helper.make_node("Split", ["x"], ["a", "b"], split=[3, 1])], {"x": (F, [4])},
                 {"a": F, "b": F}, opset=11)
    check(sized, {"x": x}, {"a": [0, 1, 2], "b": [3]})


def test_split_with_an_empty_part_feeds_concat():
    # The empty part holds no values: it is known, and Concat drops it.
    m = make([helper.make_node("Split", ["x", "s"], ["a", "b"]),
              helper.make_node("Concat", ["b", "a"], ["y"], axis=0)],
             {"x": (F, [3])}, {"y": F}, {"s": np.array([3, 0], np.int64)})
    g = check(m, {"x": np.array([4, 5, 6], F32)}, {"y": [4, 5, 6]})
    assert ops(g) == ["split", "concat"]


# -- Slice ----------------------------------------------------------------------------------------
def _slice_model(shape, starts, ends, axes=None, steps=None):
    inits = {"st": np.array(starts, np.int64), "en": np.array(ends, np.int64)}
    names = ["x", "st", "en"]
    if axes is not None:
        inits["ax"] = np.array(axes, np.int64)
        names.append("ax")
    if steps is not None:
        if axes is None:
            names.append("")
        inits["sp"] = np.array(steps, np.int64)
        names.append("sp")
    return make([helper.make_node("Slice", names, ["y"])], {"x": (F, shape)}, {"y": F}, inits)


def test_slice_negative_step_slices_then_reverses():
    x = np.arange(10, dtype=F32)
    g = check(_slice_model([10], [8], [1], steps=[-3]), {"x": x}, {"y": [8, 5, 2]})
    assert ops(g) == ["slice", "reverse"]
    assert g.operations[0].attrs == {"starts": [2], "sizes": [7], "strides": [3]}


def test_slice_negative_step_from_int64_max_to_int64_min_reverses_all():
    x = np.arange(4, dtype=F32)
    i64 = np.iinfo(np.int64)
    check(_slice_model([4], [i64.max], [i64.min], steps=[-1]), {"x": x}, {"y": [3, 2, 1, 0]})


def test_slice_clamps_and_counts_negative_bounds_from_the_end():
    x = np.arange(12, dtype=F32).reshape(3, 4)
    # axis -1: start -3 -> 1, end 1000 -> 4; axis 0: start -100 -> 0, end -1 -> 2
    m = _slice_model([3, 4], [-3, -100], [1000, -1], axes=[-1, 0])
    check(m, {"x": x}, {"y": [[1, 2, 3], [5, 6, 7]]})


def test_slice_step_2_on_two_axes():
    x = np.arange(20, dtype=F32).reshape(4, 5)
    check(_slice_model([4, 5], [0, 1], [4, 5], axes=[0, 1], steps=[2, 2]), {"x": x},
          {"y": [[1, 3], [11, 13]]})


def test_slice_opset9_attributes():
    x = np.arange(6, dtype=F32).reshape(2, 3)
    m = make([helper.make_node("Slice", ["x"], ["y"], starts=[1], ends=[3], axes=[1])],
             {"x": (F, [2, 3])}, {"y": F}, opset=9)
    check(m, {"x": x}, {"y": [[1, 2], [4, 5]]})


def test_slice_selecting_nothing_is_an_empty_known_value():
    x = np.arange(4, dtype=F32)
    m = make([helper.make_node("Slice", ["x", "st", "en"], ["e"]),
              helper.make_node("Shape", ["e"], ["n"]),
              helper.make_node("Concat", ["x", "e"], ["y"], axis=0)],
             {"x": (F, [4])}, {"y": F, "n": I64},
             {"st": np.array([3], np.int64), "en": np.array([1], np.int64)})
    check(m, {"x": x}, {"y": [0, 1, 2, 3], "n": [0]})


# -- Pad ------------------------------------------------------------------------------------------
def _pad_model(mode, pads, shape, value=None, axes=None, opset=18):
    inits = {"p": np.array(pads, np.int64)}
    names = ["x", "p"]
    if value is not None or axes is not None:
        names.append("v" if value is not None else "")
        if value is not None:
            inits["v"] = np.array(value, F32)
    if axes is not None:
        names.append("a")
        inits["a"] = np.array(axes, np.int64)
    return make([helper.make_node("Pad", names, ["y"], mode=mode)], {"x": (F, shape)},
                {"y": F}, inits, opset=opset)


def test_pad_constant_value_and_onnx_pads_order():
    # ONNX pads: [begin axis 0, begin axis 1, end axis 0, end axis 1]
    x = np.array([[1, 2], [3, 4]], F32)
    g = check(_pad_model("constant", [0, 1, 1, 0], [2, 2], value=1.5), {"x": x},
              {"y": [[1.5, 1, 2], [1.5, 3, 4], [1.5, 1.5, 1.5]]})
    assert g.operations[0].attrs["beginningPadding"] == [0, 1]
    assert g.operations[0].attrs["endingPadding"] == [1, 0]


def test_pad_reflect_edge_and_wrap():
    x = np.array([1, 2, 3], F32)
    check(_pad_model("reflect", [2, 1], [3]), {"x": x}, {"y": [3, 2, 1, 2, 3, 2]})
    check(_pad_model("edge", [1, 2], [3]), {"x": x}, {"y": [1, 1, 2, 3, 3, 3]})
    g = check(_pad_model("wrap", [1, 2], [3], opset=19), {"x": x}, {"y": [3, 1, 2, 3, 1, 2]})
    assert "pad" not in ops(g)  # wrap is built from slices and a concat


def test_pad_wrap_on_two_axes_fills_the_corners():
    x = np.array([[1, 2], [3, 4]], F32)
    check(_pad_model("wrap", [1, 0, 0, 1], [2, 2], opset=19), {"x": x},
          {"y": [[3, 4, 3], [1, 2, 1], [3, 4, 3]]})


def test_pad_negative_pads_crop_first():
    x = np.array([1, 2, 3, 4], F32)
    check(_pad_model("constant", [-1, 2], [4]), {"x": x}, {"y": [2, 3, 4, 0, 0]})
    check(_pad_model("edge", [1, -2], [4]), {"x": x}, {"y": [1, 1, 2]})


def test_pad_axes_input_pads_only_those_axes():
    x = np.array([[1, 2], [3, 4]], F32)
    check(_pad_model("constant", [1, 0], [2, 2], value=9, axes=[-1]), {"x": x},
          {"y": [[9, 1, 2], [9, 3, 4]]})


def test_pad_opset2_attributes():
    x = np.array([1, 2], F32)
    m = make([helper.make_node("Pad", ["x"], ["y"], pads=[1, 1], value=7.0)], {"x": (F, [2])},
             {"y": F}, opset=10)  # Pad-2's attributes hold up to opset 10
    check(m, {"x": x}, {"y": [7, 1, 2, 7]})


def test_pad_with_a_run_time_constant_value_uses_where():
    x = np.array([1, 2], F32)
    m = make([helper.make_node("Pad", ["x", "p", "v"], ["y"])],
             {"x": (F, [2]), "v": (F, [])}, {"y": F}, {"p": np.array([1, 2], np.int64)})
    g = check(m, {"x": x, "v": np.array(-5, F32)}, {"y": [-5, 1, 2, -5, -5]})
    assert ops(g) == ["pad", "pad", "where"]


# -- Expand, Tile, Trilu, CumSum ----------------------------------------------------------------
def test_expand_broadcasts_both_ways():
    # shape [2, 1, 4] with input [3, 1]: the 1 in shape keeps the input's 3
    x = np.array([[1], [2], [3]], F32)
    m = make([helper.make_node("Expand", ["x", "s"], ["y"])], {"x": (F, [3, 1])}, {"y": F},
             {"s": np.array([2, 1, 4], np.int64)})
    g = check(m, {"x": x}, {"y": np.broadcast_to(x, (2, 3, 4))})
    assert g.operations[0].attrs["newShape"] == [2, 3, 4]


def test_tile_repeats():
    m = make([helper.make_node("Tile", ["x", "r"], ["y"])], {"x": (F, [1, 2])}, {"y": F},
             {"r": np.array([2, 2], np.int64)})
    check(m, {"x": np.array([[1, 2]], F32)}, {"y": [[1, 2, 1, 2], [1, 2, 1, 2]]})


def test_trilu_upper_with_k_and_lower_default():
    x = np.arange(1, 10, dtype=F32).reshape(3, 3)
    upper = make([helper.make_node("Trilu", ["x", "k"], ["y"])], {"x": (F, [3, 3])}, {"y": F},
                 {"k": np.array(1, np.int64)})
    check(upper, {"x": x}, {"y": [[0, 2, 3], [0, 0, 6], [0, 0, 0]]})
    lower = make([helper.make_node("Trilu", ["x"], ["y"], upper=0)], {"x": (F, [3, 3])},
                 {"y": F})
    check(lower, {"x": x}, {"y": [[1, 0, 0], [4, 5, 0], [7, 8, 9]]})


def test_cumsum_reverse_exclusive_on_negative_axis():
    x = np.array([[1, 2, 3, 4]], F32)
    m = make([helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)],
             {"x": (F, [1, 4])}, {"y": F}, {"a": np.array(-1, np.int64)})
    g = check(m, {"x": x}, {"y": [[9, 7, 4, 0]]})
    assert g.operations[0].attrs == {"axis": 1, "exclusive": True, "reversed": True}


def test_cumsum_axis_from_a_graph_input_is_refused():
    m = make([helper.make_node("CumSum", ["x", "a"], ["y"])],
             {"x": (F, [4]), "a": (I64, [])}, {"y": F})
    reason = unsupported(m, {"x": np.ones(4, F32), "a": np.array(0, np.int64)})
    assert "the axis input must be known at conversion time" in reason


# -- Dropout ------------------------------------------------------------------------------------
def test_dropout_at_inference_is_identity_with_an_all_ones_mask():
    x = np.array([1, -2, 3], F32)
    m = make([helper.make_node("Dropout", ["x", "r"], ["y", "mask"])], {"x": (F, [3])},
             {"y": F, "mask": BOOL}, {"r": np.array(0.5, F32)}, opset=13)
    g = check(m, {"x": x}, {"y": [1, -2, 3], "mask": [1, 1, 1]})
    assert g.outputs["mask"].kind == "intermediate"  # an identity of the known mask


def test_dropout_training_with_zero_ratio_changes_nothing():
    x = np.array([1, 2], F32)
    m = make([helper.make_node("Dropout", ["x", "r", "t"], ["y"])], {"x": (F, [2])}, {"y": F},
             {"r": np.array(0.0, F32), "t": np.array(True)}, opset=13)
    check(m, {"x": x}, {"y": [1, 2]})


def test_dropout_training_with_a_ratio_is_refused():
    m = make([helper.make_node("Dropout", ["x", "r", "t"], ["y"])], {"x": (F, [2])}, {"y": F},
             {"r": np.array(0.25, F32), "t": np.array(True)}, opset=13)
    reason = unsupported(m, {"x": np.ones(2, F32)})
    assert "training_mode is true with ratio 0.25" in reason
