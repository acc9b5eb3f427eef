"""The executor around the lowering: to_onnx's model, feed checking, names, constants."""
from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError
from converter.runtimes.execute import run
from converter.ir import ConstantData
from converter.lowering.onnx import lower, to_onnx

from .helpers import assert_exact


def _small_graph():
    b = GraphBuilder("small")
    x = b.input("x", "float32", [2, 2])
    y = b.input("y", "int32", [3])
    return b.build({"sum": b.add(x, b.constant(np.ones((2, 2), np.float32))),
                    "neg": b.neg(y)})


def test_to_onnx_keeps_names_and_passes_the_onnx_checker():
    model = to_onnx(_small_graph())
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["x", "y"]
    assert [o.name for o in model.graph.output] == ["sum", "neg"]
    assert model.opset_import[0].version == 21
    assert to_onnx(_small_graph(), opset=18).opset_import[0].version == 18


def test_each_op_writes_its_output_name_directly_in_nodes_named_after_it():
    # no Cast or Identity is added for float and int32 inputs and outputs; the nodes' names
    # trace back to the WebNN operations
    model = to_onnx(_small_graph())
    nodes = [(n.op_type, n.name, list(n.output)) for n in model.graph.node]
    assert nodes == [("Add", "add/Add#", ["sum"]), ("Neg", "neg/Neg#", ["neg"])]


def test_one_result_under_two_output_names_gets_an_identity_of_no_operation():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    y = b.neg(x)
    g = b.build({"a": y, "b": y})
    model = to_onnx(g)
    nodes = [(n.op_type, n.name, list(n.input), list(n.output)) for n in model.graph.node]
    # the Identity comes after every operation, so no operation's name is on it
    assert nodes[-1] == ("Identity", "Identity#", ["a"], ["b"])
    got = run(g, {"x": np.array([1, -3], np.float32)})
    assert_exact(got["a"], [-1, 3], np.float32)
    assert_exact(got["b"], [-1, 3], np.float32)


def test_an_unused_constant_is_not_emitted():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    b.constant(np.full(2, 7, np.float32), name="unused")
    g = b.build({"y": b.add(x, b.constant(np.array([1.5, -2], np.float32), name="k"))})
    assert [t.name for t in to_onnx(g).graph.initializer] == ["k"]
    assert_exact(run(g, {"x": np.array([1, 2], np.float32)})["y"], [2.5, 0], np.float32)


def test_unsupported_opset_is_refused():
    with pytest.raises(ConverterError, match="opset 12 is not supported"):
        to_onnx(_small_graph(), opset=12)


def test_the_newest_opset_onnx_knows_is_accepted_and_the_next_is_not():
    newest = onnx.defs.onnx_opset_version()
    assert to_onnx(_small_graph(), opset=newest).opset_import[0].version == newest
    with pytest.raises(ConverterError, match=f"opset {newest + 1} is not supported"):
        to_onnx(_small_graph(), opset=newest + 1)


def test_outputs_named_like_an_input_or_a_constant_get_an_output_suffix():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    c = b.constant(np.ones(2, np.float32), name="c")
    g = b.build({"x": b.neg(x), "c": b.add(x, c), "y": b.abs(x)})
    model = to_onnx(g)
    assert [o.name for o in model.graph.output] == ["x_output", "c_output", "y"]
    got = run(g, {"x": np.array([1, -2], np.float32)})
    assert_exact(got["x"], [-1, 2], np.float32)
    assert_exact(got["c"], [2, -1], np.float32)


def test_run_reports_every_feed_problem_at_once():
    g = _small_graph()
    with pytest.raises(ConverterError) as e:
        run(g, {"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)})
    text = str(e.value)
    assert "input 'x' has shape [2, 2], the feed has [2, 3]" in text
    assert "input 'y' (i32[3]) is not fed" in text
    assert "'z' is not an input of the graph" in text
    with pytest.raises(ConverterError, match="input 'y' is int32, the feed is numpy float64"):
        run(g, {"x": np.zeros((2, 2), np.float32), "y": np.zeros(3)})


def test_unknown_runtime():
    with pytest.raises(ConverterError, match="unknown runtime 'tvm'"):
        run(_small_graph(), {}, runtime="tvm")


def test_output_named_like_an_input_and_one_operand_under_two_names():
    b = GraphBuilder()
    x = b.input("x", "float32", [2])
    y = b.relu(x)
    g = b.build({"x": y, "again": y, "other": b.neg(x)})
    got = run(g, {"x": np.array([-1, 2], np.float32)})
    assert set(got) == {"x", "again", "other"}
    assert_exact(got["x"], [0, 2], np.float32)
    assert_exact(got["again"], [0, 2], np.float32)
    assert_exact(got["other"], [1, -2], np.float32)


def test_scalar_inputs_and_outputs_stay_rank_0():
    b = GraphBuilder()
    x = b.input("x", "float32", [])
    i = b.input("i", "int32", [])
    got = run(b.build({"y": b.mul(x, x), "n": b.isNaN(i)}),
              {"x": np.array(3, np.float32), "i": np.array(1, np.int32)})
    assert_exact(got["y"], 9, np.float32)
    assert got["y"].shape == () and got["n"].shape == ()


def test_large_constants_go_to_ort_without_being_inlined():
    w = np.arange(512 * 1024, dtype=np.float32).reshape(512, 1024)  # 2 MiB
    b = GraphBuilder()
    x = b.input("x", "float32", [512, 1024])
    g = b.build({"y": b.sub(x, b.constant(w, name="w"))})
    lowered = lower(g, external_min_bytes=1 << 20)
    assert np.shares_memory(lowered.external["w"], w)  # the graph's own array, not a copy
    init = {t.name: t for t in lowered.model.graph.initializer}["w"]
    assert init.data_location == onnx.TensorProto.EXTERNAL and not init.raw_data
    assert len(to_onnx(g).graph.initializer[0].raw_data) == w.nbytes
    got = run(g, {"x": w + 1})
    assert_exact(got["y"], np.ones((512, 1024)), np.float32)


def test_filled_constants():
    b = GraphBuilder()
    x = b.input("x", "float32", [64, 64])
    big = b.graph.add_constant("big", ConstantData("float32", (64, 64), fill=0.5))
    g = b.build({"y": b.add(b.add(x, big), b.constant("float32", 2.0))})
    model = to_onnx(g)
    assert "ConstantOfShape" in [n.op_type for n in model.graph.node]
    got = run(g, {"x": np.ones((64, 64), np.float32)})
    assert_exact(got["y"], np.full((64, 64), 3.5), np.float32)


@pytest.mark.parametrize("count, as_node", [(16, False), (17, True)])
def test_filled_constants_past_16_elements_become_constant_of_shape(count, as_node):
    b = GraphBuilder()
    x = b.input("x", "float32", [count])
    filled = b.graph.add_constant("filled", ConstantData("float32", (count,), fill=-1.5))
    g = b.build({"y": b.mul(x, filled)})
    model = to_onnx(g)
    assert ("ConstantOfShape" in [n.op_type for n in model.graph.node]) == as_node
    assert ("filled" in [t.name for t in model.graph.initializer]) == (not as_node)
    got = run(g, {"x": np.arange(count, dtype=np.float32)})
    assert_exact(got["y"], np.arange(count) * -1.5, np.float32)


def test_int64_values_beyond_double_precision_stay_exact():
    big = 2**62 + 3
    b = GraphBuilder()
    x = b.input("x", "int64", [3])
    got = run(b.build({"s": b.add(x, x), "m": b.max(x, b.constant(np.array([1, 2, big + 2],
                                                                           np.int64))),
                       "r": b.reduceSum(x), "c": b.cumulativeSum(x, 0)}),
              {"x": np.array([big, -big, 2**53 + 1], np.int64)})
    assert_exact(got["s"], [2 * big - 2**64, -2 * big + 2**64, 2**54 + 2], np.int64)
    assert_exact(got["m"], [big, 2, big + 2], np.int64)
    assert_exact(got["r"], 2**53 + 1, np.int64)
    assert_exact(got["c"], [big, 0, 2**53 + 1], np.int64)


def test_every_catalogue_op_has_a_lowering():
    from converter.lowering.onnx.registry import all_lowerings
    from converter.ops import all_ops

    assert set(all_lowerings()) == set(all_ops())
    assert len(all_lowerings()) == 95


def test_older_opset_lowers_gelu_as_the_erf_formula():
    import math

    b = GraphBuilder()
    x = b.input("x", "float32", [3])
    g = b.build({"y": b.gelu(x), "p": b.split(b.reduceMean(b.reshape(x, [3, 1]), axes=[1],
                                                          keepDimensions=True), [1, 2])[1]})
    assert "Gelu" not in [n.op_type for n in to_onnx(g, opset=18).graph.node]
    got = run(g, {"x": np.array([-1, 0, 2], np.float32)}, opset=18)
    from .helpers import assert_ulp

    assert_ulp(got["y"], np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in (-1, 0, 2)]),
               18)
    assert_exact(got["p"], [[0], [2]], np.float32)


def test_runtime_failures_are_converter_errors():
    b = GraphBuilder()
    x = b.input("x", "int32", [2])
    g = b.build({"d": b.div(x, b.constant(np.array([1, 0], np.int32)))})
    with pytest.raises(ConverterError, match="division by zero"):
        run(g, {"x": np.array([4, 5], np.int32)})


def test_what_older_opsets_cannot_express_is_refused_by_name():
    from converter.errors import UnsupportedError

    b = GraphBuilder()
    x = b.input("x", "float32", [1, 1, 5, 5])
    g = b.build({"y": b.averagePool2d(x, windowDimensions=[2, 2], dilations=[2, 2])})
    with pytest.raises(UnsupportedError, match="dilations needs ONNX opset 19"):
        to_onnx(g, opset=18)
    assert to_onnx(g, opset=19).opset_import[0].version == 19

    b = GraphBuilder()
    q = b.input("q", "int4", [2])
    g = b.build({"d": b.dequantizeLinear(q, b.constant(np.ones(1, np.float32)),
                                         b.constant("int4", [1], [0]))})
    with pytest.raises(UnsupportedError, match="4-bit operand 'q' needs ONNX opset 21"):
        to_onnx(g, opset=20)


@pytest.mark.parametrize("value, data_type, want", [
    (float("nan"), "int32", 0), (float("inf"), "int8", 127), (float("-inf"), "uint8", 0),
    (2.5, "int32", 2), (3.5, "int32", 4), (-2.5, "int8", -2),  # half to even
    (300.7, "uint8", 255), (-129.2, "int8", -128), (70000, "int16", 32767),
    (-(2 ** 70), "int64", -(2 ** 63)), (2 ** 2000, "float32", float("inf")),
    (-(2 ** 2000), "float64", float("-inf")), (2 ** 1001, "float64", 2.0 ** 1001),
    (1e300, "float16", float("inf")),
    (0.1, "float32", np.float32(0.1)),
])
def test_spec_cast_of_numbers(value, data_type, want):
    from converter.lowering.onnx.context import NUMPY_TYPES, spec_cast
    got = spec_cast(value, data_type)
    assert got.dtype == NUMPY_TYPES[data_type] and got == want


@pytest.mark.parametrize("layout", ["transposed", "big-endian", "plain"])
def test_external_constants_are_little_endian_c_order_from_the_threshold_on(layout):
    # a constant of exactly external_min_bytes is external; a non-contiguous or big-endian
    # array is handed over as a contiguous little-endian copy with the same values, a plain
    # one as itself
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = {"transposed": base.T, "big-endian": base.astype(">f4"), "plain": base}[layout]
    b = GraphBuilder()
    x = b.input("x", "float32", list(w.shape))
    g = b.build({"y": b.add(x, b.constant(w, name="w"))})
    lowered = lower(g, external_min_bytes=w.nbytes)
    ext = lowered.external["w"]
    assert ext.flags.c_contiguous and ext.dtype == np.dtype("<f4")
    np.testing.assert_array_equal(ext, w)
    assert np.shares_memory(ext, w) == (layout == "plain")
    assert not lower(g, external_min_bytes=w.nbytes + 1).external


def test_a_big_endian_constant_held_as_such_goes_external_as_little_endian():
    # The builder converts big-endian arrays, but ConstantData holds whatever it is given (a
    # weights file read as '>f4'): the external copy must be little-endian with the same values,
    # and ONNX Runtime must compute with them.
    b = GraphBuilder()
    x = b.input("x", "float32", [3, 4])
    w = b.constant(np.zeros((3, 4), np.float32), name="w")
    g = b.build({"y": b.add(x, w)})
    big = np.arange(12, dtype=">f4").reshape(3, 4)
    g.constants["w"].constant = ConstantData("float32", (3, 4), array=big)
    ext = lower(g, external_min_bytes=big.nbytes).external["w"]
    assert ext.dtype == np.dtype("<f4") and ext.dtype.byteorder != ">"
    np.testing.assert_array_equal(ext, np.arange(12, dtype=np.float32).reshape(3, 4))
    got = run(g, {"x": np.ones((3, 4), np.float32)})["y"]
    assert_exact(got, np.arange(1, 13, dtype=np.float32).reshape(3, 4), np.float32)


def test_constants_read_from_the_temporary_file_land_at_their_aligned_offsets(monkeypatch):
    # Small thresholds (the real ones need 32 MiB of weights) send both constants through the
    # external-data file; the first is 1200 bytes, so the second starts after 64 KiB - 1200
    # bytes of padding, and ONNX Runtime must read each at its recorded offset.
    from converter.lowering.onnx import executor
    monkeypatch.setattr(executor, "_EXTERNAL_MIN_BYTES", 1000)
    monkeypatch.setattr(executor, "_VIA_FILE_MIN_BYTES", 2000)
    w1 = np.arange(300, dtype=np.float32)
    w2 = np.arange(300, dtype=np.float32)[::-1] * 3
    b = GraphBuilder()
    x = b.input("x", "float32", [300])
    g = b.build({"y": b.add(b.add(x, b.constant(w1, name="w1")), b.constant(w2, name="w2")),
                 "z": b.mul(x, b.constant(w2 + 1, name="w3"))})
    got = executor.prepare(g)({"x": np.ones(300, np.float32)})
    assert_exact(got["y"], 1 + w1 + w2, np.float32)
    assert_exact(got["z"], w2 + 1, np.float32)


def test_a_fresh_process_finds_every_lowering_rule_through_the_registry_alone():
    # The rule modules register themselves when imported; the registry imports them on first
    # use, so importing only the registry is enough (checked in a process that imported nothing).
    import subprocess
    import sys
    code = ("from converter.lowering.onnx.registry import all_lowerings, lowering_for;"
            "print(lowering_for('conv2d').__name__, len(all_lowerings()) > 90)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["conv2d", "True"]
    code = ("from converter.lowering.onnx.registry import all_lowerings;"
            "print('gruCell' in all_lowerings())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True"]


def _graph_with_a_duplicate_node_name():
    graph = _small_graph()
    graph.operations[1].name = graph.operations[0].name
    assert graph.problems() == ["neg 'add': duplicate node name"]
    return graph


def test_an_invalid_graph_is_refused_before_it_is_lowered():
    from converter.lowering.onnx.executor import run_on_ort

    feeds = {"x": np.ones((2, 2), np.float32), "y": np.arange(3, dtype=np.int32)}
    with pytest.raises(ConverterError) as info:
        run_on_ort(_graph_with_a_duplicate_node_name(), feeds)
    assert info.value.line() == ("graph 'small': neg 'add': duplicate node name; the graph must "
                                 "be valid to run; see `webnn-convert validate`")


def test_feed_mistakes_are_reported_before_the_graph_s_own():
    from converter.lowering.onnx.executor import run_on_ort

    with pytest.raises(ConverterError, match="feeds: input 'y' \\(i32\\[3\\]\\) is not fed"):
        run_on_ort(_graph_with_a_duplicate_node_name(), {"x": np.ones((2, 2), np.float32)})


def test_without_onnxruntime_running_is_refused_with_what_to_install(monkeypatch):
    from converter.errors import UnsupportedError
    from converter.lowering.onnx.executor import run_on_ort

    from converter.lowering.onnx import kernels

    assert kernels.ort_available()  # the kernel table is read (and cached) before ORT goes
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails
    with pytest.raises(UnsupportedError) as info:
        run_on_ort(_small_graph(), {"x": np.ones((2, 2), np.float32),
                                    "y": np.arange(3, dtype=np.int32)})
    assert "onnxruntime is not installed; pip install onnxruntime" in info.value.line()


def test_a_failure_inside_onnx_runtime_is_a_converter_error(monkeypatch):
    # no valid lowered graph is known to fail at run time short of running out of memory,
    # so the session's failure is made here
    from converter.lowering.onnx import executor

    real = executor._ort_session

    class Failing:
        def __init__(self, lowered):
            self.session = real(lowered)

        def run(self, *args):
            raise RuntimeError("out of memory")

    monkeypatch.setattr(executor, "_ort_session", Failing)
    with pytest.raises(ConverterError) as info:
        executor.run_on_ort(_small_graph(), {"x": np.ones((2, 2), np.float32),
                                             "y": np.arange(3, dtype=np.int32)})
    assert info.value.line() == ("executor: ONNX Runtime failed running the lowered model: "
                                 "out of memory")
