"""CAST of a COMPLEX64 tensor (an RFFT2D's spectrum), as LiteRT computes it.

LiteRT's CAST kernel reads a complex64 input's real part (std::real) and casts that: to
float32 it is the REAL op, to float16 and the integer types the real part converted, to BOOL
`real != 0` whatever the imaginary part holds (checked below with a bin whose real part is 0
and imaginary part is not). Before, the import refused every such CAST ("CAST is imported for
real tensors only").
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.verification.parity import Bounds
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import TfliteBuilder

from .helpers import EXACT, check, ops_of, rand


def _spectrum_cast(shape, lengths, target: str, also_parts: bool = False) -> bytes:
    """x -> RFFT2D -> CAST to `target`; with also_parts, REAL and IMAG of the spectrum too."""
    b = TfliteBuilder()
    x = b.input("x", shape)
    f = b.constant("fft_length", np.array(lengths, np.int32))
    out = list(shape[:-2]) + [lengths[0], lengths[1] // 2 + 1]
    spectrum = b.tensor("spectrum", out, "complex64")
    b.op("RFFT2D", [x, f], [spectrum])
    cast = b.tensor("cast", out, target)
    b.op("CAST", [spectrum], [cast])
    outputs = [cast]
    if also_parts:
        for name, code in (("re", "REAL"), ("im", "IMAG")):
            outputs.append(b.tensor(name, out))
            b.op(code, [spectrum], [outputs[-1]])
    return b.build(outputs)


def _rfft_bound(shape, lengths, largest: float, dtype=np.float32) -> Bounds:
    """The RFFT2D budget of test_spectral (the matrix products' error, as an absolute bound
    from the largest bin), plus one rounding to `dtype`."""
    hc, wc = min(shape[-2], lengths[0]), min(shape[-1], lengths[1])
    ulps = 2 * wc + (2 * (2 * hc) + 1 if lengths[0] > 1 else 0)
    slack = float(np.spacing(dtype(largest))) if dtype != np.float32 else 0.0
    return Bounds(atol=float(ulps * np.spacing(np.float32(largest))) + slack, rtol=0)


@pytest.mark.parametrize("shape, lengths", [([2, 6, 8], [8, 8]), ([3, 16], [1, 16])])
@pytest.mark.parametrize("target, dtype", [("float32", np.float32), ("float16", np.float16)])
def test_cast_of_a_spectrum_to_float_is_its_real_part_as_litert(shape, lengths, target, dtype):
    x = rand(*shape)
    model = _spectrum_cast(shape, lengths, target, also_parts=True)
    want = run_litert(model, {"x": x})
    np.testing.assert_array_equal(want["cast"], want["re"].astype(dtype))  # LiteRT: real part
    largest = float(np.abs(np.fft.rfft2(x.astype(np.float64), s=lengths)).max())
    graph, got = check(model, {"x": x}, _rfft_bound(shape, lengths, largest, dtype))
    assert got["cast"].dtype == dtype
    assert "cast" in ops_of(graph) or target == "float32"


# fft_length [1, 2]: bin 0 is x0 + x1 and bin 1 is x0 - x1, exact in every implementation (the
# DFT's cos is exactly +-1 there), so integer and bool casts compare bit for bit.
# Every real part lies in each target's range (LiteRT saturates outside it).
_PAIRS = np.array([[2.5, 1.75], [4.0, -3.25], [2.5, 2.5], [0.5, -0.75], [100.5, 20.25]],
                  np.float32)


@pytest.mark.parametrize("target", ["int32", "int8", "uint8", "int64", "bool"])
def test_cast_of_a_spectrum_to_integers_and_bool_keeps_the_real_part_as_litert(target):
    x = _PAIRS.reshape(5, 1, 2)
    model = _spectrum_cast([5, 1, 2], [1, 2], target)
    want = run_litert(model, {"x": x})["cast"]
    real = np.stack([_PAIRS.sum(1), _PAIRS[:, 0] - _PAIRS[:, 1]], axis=1).reshape(5, 1, 2)
    np.testing.assert_array_equal(want, real.astype(want.dtype) if target != "bool"
                                  else real != 0)  # [2.5, 2.5] has a 0 real part
    _, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["cast"], np.asarray(want).astype(got["cast"].dtype))


def test_bool_ignores_a_nonzero_imaginary_part_as_litert():
    # x = [0, 1, 0, -1] (fft_length [1, 4]): bin 1 is -2i, a zero real part, so LiteRT's CAST
    # gives False there although the value is not zero.
    x = np.array([[0, 1, 0, -1]], np.float32)
    model = _spectrum_cast([1, 4], [1, 4], "bool", also_parts=True)
    want = run_litert(model, {"x": x})
    assert want["im"][0, 1] == -2 and want["re"][0, 1] == 0
    assert not want["cast"].any()
    _, got = check(model, {"x": x}, _rfft_bound([1, 4], [1, 4], 2.0))
    assert not got["cast"].any()


def test_cast_of_a_spectrum_to_complex64_keeps_both_parts():
    b = TfliteBuilder()
    x = b.input("x", [2, 8])
    f = b.constant("fft_length", np.array([1, 8], np.int32))
    spectrum = b.tensor("spectrum", [2, 5], "complex64")
    b.op("RFFT2D", [x, f], [spectrum])
    same = b.tensor("same", [2, 5], "complex64")
    b.op("CAST", [spectrum], [same])
    outputs = []
    for name, code in (("re", "REAL"), ("im", "IMAG")):
        outputs.append(b.tensor(name, [2, 5]))
        b.op(code, [same], [outputs[-1]])
    xv = rand(2, 8)
    largest = float(np.abs(np.fft.rfft(xv.astype(np.float64))).max())
    check(b.build(outputs), {"x": xv}, _rfft_bound([2, 8], [1, 8], largest))


# -- float to integer: LiteRT saturates ------------------------------------------------------
_SPECIAL = np.array([[np.nan, np.inf, -np.inf, 2147483520.0, 2147483648.0, -2147483648.0,
                      4294967040.0, 4294967296.0, 9.3e18, -9.3e18, 255.9, -0.9, 300.7, -2.5,
                      127.5, -128.5, 42.0, -0.0]], np.float32)


@pytest.mark.parametrize("target", ["uint8", "int8", "int32", "uint32", "int64"])
def test_float_to_integer_cast_saturates_as_litert(target):
    b = TfliteBuilder()
    x = b.input("x", list(_SPECIAL.shape))
    out = b.tensor("cast", list(_SPECIAL.shape), target)
    b.op("CAST", [x], [out])
    model = b.build([out])
    want = run_litert(model, {"x": _SPECIAL})["cast"]
    info = np.iinfo(target)
    assert want[0, 1] == info.max and want[0, 2] == info.min  # LiteRT saturates +-inf
    check(model, {"x": _SPECIAL}, EXACT)


@pytest.mark.parametrize("target", ["uint8", "int8", "int32"])
def test_cast_of_a_spectrum_out_of_range_saturates_as_litert(target):
    # bins 0 and 1 of [x0, x1] are x0 + x1 and x0 - x1: 1000 and -1000, past int8 and uint8
    x = np.array([[[500.25, 499.75]], [[-500.25, 499.75]]], np.float32)
    model = _spectrum_cast([2, 1, 2], [1, 2], target)
    want = run_litert(model, {"x": x})["cast"]
    _, got = check(model, {"x": x}, EXACT)
    np.testing.assert_array_equal(got["cast"], want)
