"""int8_in_float on ops a target does not list for int8 at all: Chromium 153's LiteRT backend
takes pad and maxPool2d in float32 and uint8 but not int8, and a statically quantized TFLite
model (ai-edge-quantizer's static_wi8_ai8 resnet18, tools/vision_sweep.py) pads and max-pools
int8 values. Both are exact in float32, so the pass computes them there between casts; the
values are checked against numpy's pad and a max over each window."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.passes.int8_in_float import lacks_int8
from converter.targets import Target, load_target
from converter.targets.check import check

LITERT = load_target("chromium-litert")


def pad_pool_graph(data_type="int8", mode="constant"):
    b = GraphBuilder("quantized")
    x = b.input("x", data_type, [1, 2, 5, 5])
    padded = b.pad(x, [0, 0, 1, 0], [0, 0, 0, 1], mode=mode, value=-7, name="pad")
    return b.build({"y": b.maxPool2d(padded, windowDimensions=[2, 2], strides=[2, 2],
                                     name="pool")})


def _want(x: np.ndarray, mode: str) -> np.ndarray:
    widths = [(0, 0), (0, 0), (1, 0), (0, 1)]
    padded = np.pad(x, widths, constant_values=-7) if mode == "constant" else \
        np.pad(x, widths, mode="reflect")
    n, c, h, w = padded.shape
    return padded.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def test_chromium_litert_lacks_int8_pad_and_max_pool_but_takes_float32():
    graph = pad_pool_graph()
    assert [lacks_int8(op, LITERT) for op in graph.operations] == [True, True]
    assert {(v.op, v.kind) for v in check(graph, LITERT)} == {("pad", "data-type"),
                                                            ("maxPool2d", "data-type")}
    assert not any(lacks_int8(op, LITERT) for op in pad_pool_graph("uint8").operations)
    assert not any(lacks_int8(op, LITERT) for op in pad_pool_graph("float32").operations)


def test_ops_that_round_or_whose_float_form_is_missing_are_left():
    b = GraphBuilder("g")
    x = b.input("x", "int8", [1, 2, 4, 4])
    graph = b.build({"y": b.mul(x, x, name="square")})
    assert not lacks_int8(graph.operations[0], LITERT)  # computes values: may round
    no_float = Target("t", {"pad": {"input": {"dataTypes": ["int32"]},
                                    "output": {"dataTypes": ["int32"]}},
                            "maxPool2d": {}})
    pad, pool = pad_pool_graph().operations
    assert not lacks_int8(pad, no_float)
    assert not lacks_int8(pool, no_float)  # an op the file lists without limits takes int8


@pytest.mark.parametrize("mode", ["constant", "reflection"])
def test_int8_pad_and_max_pool_run_in_float32_with_the_same_values(mode):
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 2, 5, 5)).astype(np.int8)
    graph = pad_pool_graph(mode=mode)
    [(_, result)] = run_passes(graph, ["int8_in_float"], PassContext(target=LITERT))
    assert result.changed and result.counts == {"int8_ops_in_float": 2}
    ops = [(op.op_type, op.output.data_type) for op in graph.operations]
    assert ops == [("cast", "float32"), ("pad", "float32"), ("cast", "int8"),
                   ("cast", "float32"), ("maxPool2d", "float32"), ("cast", "int8")]
    assert check(graph, LITERT) == []
    got = converter.run(graph, {"x": x})["y"]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, _want(x, mode))


def _types(*names):
    return {"dataTypes": list(names)}


@pytest.mark.parametrize("refused", ["input", "output"])
def test_int8_refused_on_one_side_only_is_enough(refused):
    """A target may list int8 for a pad's input and not its output, or the other way."""
    limits = {"input": _types("float32", "int8"), "output": _types("float32", "int8")}
    limits[refused] = _types("float32")
    pad, _ = pad_pool_graph().operations
    assert lacks_int8(pad, Target("t", {"pad": limits}))
    assert not lacks_int8(pad, Target("t", {"pad": {k: _types("float32", "int8")
                                                    for k in limits}}))


def test_split_results_are_named_outputs():
    b = GraphBuilder("g")
    x = b.input("x", "int8", [4, 2])
    graph = b.build({"a": b.split(x, 2, name="halves")[0]})
    split = graph.operations[0]
    assert lacks_int8(split, Target("t", {"split": {"input": _types("float32", "int8"),
                                                    "outputs": _types("float32")}}))
    assert not lacks_int8(split, Target("t", {"split": {"input": _types("float32", "int8"),
                                                        "outputs": _types("float32", "int8")}}))


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
def test_only_a_nearest_neighbor_resample_is_exact_in_float(mode):
    """A style-transfer model's int8 nearest upsampling (static int8 in the sweep): chromium-
    litert takes resample2d in float32 only. Nearest copies values; linear interpolates."""
    b = GraphBuilder("g")
    x = b.input("x", "int8", [1, 2, 3, 3])
    graph = b.build({"y": b.resample2d(x, mode=mode, scales=[2.0, 2.0], name="up")})
    up = graph.operations[0]
    assert lacks_int8(up, LITERT) == (mode == "nearest-neighbor")
    if mode == "linear":
        return
    run_passes(graph, ["int8_in_float"], PassContext(target=LITERT))
    assert check(graph, LITERT) == []
    x = np.random.default_rng(4).integers(-128, 128, (1, 2, 3, 3)).astype(np.int8)
    got = converter.run(graph, {"x": x})["y"]
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(2, axis=3))
