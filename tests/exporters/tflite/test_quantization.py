"""dequantizeLinear and quantizeLinear exported to TFLite: int8 constant weights with one scale
per tensor or channel as TFLite's own quantized tensors (DEQUANTIZE), everything else as the
spec's emulation, with blockwise scales. Dequantizing is one rounding; quantizing is exact."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import UnsupportedError
from converter.exporters.tflite import to_tflite

from .helpers import check, ops_of, rand

RNG = np.random.default_rng(21)
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-1000, 1000),
          "uint32": (0, 1000), "int4": (-8, 7), "uint4": (0, 15)}


def _dequantize(x_shape, s_shape, dt="int8", ft="float32", const_x=True, const_s=True):
    lo, hi = RANGES[dt]
    xv = RNG.integers(lo, hi, x_shape, endpoint=True)
    sv = rand(RNG, s_shape, ft, 0.01, 0.1)
    zv = RNG.integers(lo // 4, hi // 4, s_shape, endpoint=True)
    b = GraphBuilder()
    feeds = {}

    def integers(name, value, const):
        if const:
            return b.constant(dt, list(value.shape), value.tolist() if dt in ("int4", "uint4")
                              else value.astype(dt))
        feeds[name] = value.astype(dt)
        return b.input(name, dt, list(value.shape))

    x = integers("x", xv, const_x)
    if const_s:
        s, z = b.constant(sv), integers("z", zv, True)
    else:
        s, z = b.input("s", ft, list(s_shape)), integers("z", zv, False)
        feeds["s"] = sv
    # times a fed 1, so that the graph computes at run time even when all else is constant
    one = b.input("one", ft, [1])
    feeds["one"] = np.ones(1, ft)
    graph = b.build({"y": b.mul(b.dequantizeLinear(x, s, z), one)})
    y = check(graph, feeds, ulp=0)["y"]
    block = [a // c for a, c in zip(x_shape, s_shape)]
    want = (xv - np.kron(zv, np.ones(block))) * np.kron(sv.astype(np.float64), np.ones(block))
    np.testing.assert_allclose(y, want, rtol=1e-3 if ft == "float16" else 1e-7)
    return graph


@pytest.mark.parametrize("s_shape", [(1, 1), (4, 1), (1, 6)])
@pytest.mark.parametrize("dt", ["int8", "int4"])
def test_constant_int8_weights_stay_quantized_under_dequantize(s_shape, dt):
    graph = _dequantize((4, 6), s_shape, dt)
    assert ops_of(graph)[0] == "DEQUANTIZE"


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint32", "int4", "uint4"])
@pytest.mark.parametrize("s_shape", [(1, 1), (4, 1), (2, 3)])
def test_dequantize_every_type_and_blockwise_scales(dt, s_shape):
    _dequantize((4, 6), s_shape, dt)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint32"])
def test_dequantize_computed_inputs_and_scales(dt):
    _dequantize((4, 6), (4, 1), dt, const_x=False)
    _dequantize((4, 6), (2, 3), dt, const_x=False, const_s=False)


def test_dequantize_to_float16():
    _dequantize((4, 6), (4, 1), ft="float16")
    _dequantize((4, 6), (1, 1), "uint8", ft="float16")


def test_quantize_rounds_halves_to_even_and_saturates():
    b = GraphBuilder()
    x = b.input("x", "float32", [7])
    graph = b.build({
        "u8": b.quantizeLinear(x, b.constant(np.array([0.5], np.float32)),
                               b.constant(np.array([10], np.uint8))),
        "i8": b.quantizeLinear(x, b.constant(np.array([0.5], np.float32)),
                               b.constant(np.array([-1], np.int8)))})
    v = np.array([0.25, 0.75, -0.25, 1.25, 200, -200, 3], np.float32)  # /0.5: .5 1.5 -.5 2.5
    got = check(graph, {"x": v})
    assert got["u8"].tolist() == [10, 12, 10, 12, 255, 0, 16]
    assert got["i8"].tolist() == [-1, 1, -1, 1, 127, -128, 5]


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint32"])
@pytest.mark.parametrize("ft", ["float32", "float16"])
@pytest.mark.parametrize("s_shape,const", [((1, 1), True), ((4, 1), True), ((2, 3), False)])
def test_quantize_options(dt, ft, s_shape, const):
    b = GraphBuilder()
    x = b.input("x", ft, [4, 6])
    feeds = {"x": rand(RNG, (4, 6), ft, -30, 30)}
    sv, zv = rand(RNG, s_shape, ft, 0.05, 0.2), RNG.integers(0, 20, s_shape).astype(dt)
    if const:
        s, z = b.constant(sv), b.constant(zv)
    else:
        s, z = b.input("s", ft, list(s_shape)), b.input("z", dt, list(s_shape))
        feeds.update(s=sv, z=zv)
    y = check(b.build({"y": b.quantizeLinear(x, s, z)}), feeds)["y"]
    assert y.dtype == np.dtype(dt)


def test_4bit_results_and_computed_4bit_inputs_are_reported():
    b = GraphBuilder()
    x = b.input("x", "float32", [2, 2])
    q = b.quantizeLinear(x, b.constant(np.ones((1, 1), np.float32)),
                         b.constant("int4", [1, 1], [0]))
    y = b.dequantizeLinear(q, b.constant(np.ones((1, 1), np.float32)),
                           b.constant("int4", [1, 1], [0]))
    with pytest.raises(UnsupportedError) as caught:
        to_tflite(b.build({"y": y}))
    assert len(caught.value.items) == 2
    assert "TFLite computes no 4-bit tensors" in caught.value.items[0]
    assert "a 4-bit input must be a constant" in caught.value.items[1]
