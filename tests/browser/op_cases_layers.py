"""Browser cases for the layer ops: convolution, pooling, normalization, matrix products,
recurrent networks, resampling, softmax and reductions (see op_cases.py)."""
from __future__ import annotations

from converter.ops.builder import GraphBuilder

from .op_cases import FLOATS, atol, built, case, exact, rng, ulp, values

# Normalizations and recurrent networks chain a mean, a variance, a square root, divisions,
# sigmoids and tanhs; their outputs are O(1) and cross zero, so they are judged by an absolute
# bound: 1e-4 in float32 (about a thousand float32 ULPs at 1, far below any real bug) and 1e-2
# in float16 (about ten float16 ULPs at 1).
_CHAIN = {"float32": 1e-4, "float16": 1e-2}


def _start(op, dt):
    return rng(op, dt), GraphBuilder(f"{op}_{dt}")


# Sums are fed non-negative terms: a ULP budget bounds the error relative to the result, which
# cancellation (a sum near zero of large terms) would make meaningless for both sides.


@case("conv2d")
def _conv2d(op, dt):
    r, b = _start(op, dt)
    nhwc = dt == "float16"  # float32 in nchw/oihw, float16 in nhwc/ohwi: both layouts run
    shape = [1, 5, 6, 4] if nhwc else [1, 4, 5, 6]
    x = b.input("x", dt, shape)
    w_shape = (6, 3, 3, 2) if nhwc else (6, 2, 3, 3)
    w = b.constant(values(r, dt, w_shape, 0, 1))
    bias = b.constant(values(r, dt, (6,), 0, 1))
    layout = {"inputLayout": "nhwc", "filterLayout": "ohwi"} if nhwc else {}
    y = b.conv2d(x, w, padding=[1, 0, 1, 1], strides=[1, 2], groups=2, bias=bias, **layout)
    # kernelHeight x kernelWidth x (inputChannels / groups) x 2
    return built(op, dt, b, y, {"x": values(r, dt, shape, 0, 1)}, ulp(dt, 3 * 3 * 2 * 2))


@case("convTranspose2d")
def _conv_transpose2d(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [1, 2, 3, 3])
    w = b.constant(values(r, dt, (2, 3, 3, 3), 0, 1))
    bias = b.constant(values(r, dt, (3,), 0, 1))
    # Padding [0, 1, 0, 1] at stride 2 is TFLite's SAME (output = input x stride), the only
    # explicit padding Chromium's LiteRT backend takes (see known_differences.py).
    y = b.convTranspose2d(x, w, strides=[2, 2], padding=[0, 1, 0, 1], bias=bias)
    return built(op, dt, b, y, {"x": values(r, dt, (1, 2, 3, 3), 0, 1)},
                 ulp(dt, 3 * 3 * 2 * 2))


@case("averagePool2d", "maxPool2d", "l2Pool2d")
def _pool(op, dt):
    r, b = _start(op, dt)
    nhwc = dt == "float16"
    shape = [1, 5, 5, 2] if nhwc else [1, 2, 5, 5]
    x = b.input("x", dt, shape)
    y = getattr(b, op)(x, windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1],
                       layout="nhwc" if nhwc else "nchw")
    # A window is a reduction of 9 elements (l2: 2n + 1); max only selects.
    budget = {"averagePool2d": 9, "maxPool2d": 0, "l2Pool2d": 19}[op]
    return built(op, dt, b, y, {"x": values(r, dt, shape, -2, 2)}, ulp(dt, budget))


@case("batchNormalization")
def _batch_norm(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [2, 3, 4, 4])
    # x - mean >= 0.5 and a positive bias: no cancellation (see conv2d).
    mean, var = b.constant(values(r, dt, (3,), -1, -0.5)), b.constant(values(r, dt, (3,), 0.5, 2))
    scale, bias = b.constant(values(r, dt, (3,), 0.5, 2)), b.constant(values(r, dt, (3,), 0, 1))
    y = b.batchNormalization(x, mean, var, scale=scale, bias=bias, epsilon=1e-3)
    return built(op, dt, b, y, {"x": values(r, dt, (2, 3, 4, 4), 0, 2)}, ulp(dt, 6))


@case("instanceNormalization")
def _instance_norm(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [2, 3, 4, 4])
    scale, bias = b.constant(values(r, dt, (3,), 0.5, 2)), b.constant(values(r, dt, (3,), -1, 1))
    y = b.instanceNormalization(x, scale=scale, bias=bias, epsilon=1e-3)
    return built(op, dt, b, y, {"x": values(r, dt, (2, 3, 4, 4), -2, 2)}, atol(dt, _CHAIN[dt]))


@case("layerNormalization")
def _layer_norm(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [2, 3, 4])
    scale = b.constant(values(r, dt, (3, 4), 0.5, 2))
    bias = b.constant(values(r, dt, (3, 4), -1, 1))
    y = b.layerNormalization(x, scale=scale, bias=bias, axes=[1, 2], epsilon=1e-3)
    return built(op, dt, b, y, {"x": values(r, dt, (2, 3, 4), -2, 2)}, atol(dt, _CHAIN[dt]))


@case("gemm")
def _gemm(op, dt):
    r, b = _start(op, dt)
    a = b.input("a", dt, [3, 4])
    w = b.constant(values(r, dt, (5, 4), -1, 1))
    c = b.constant(values(r, dt, (5,), -1, 1))
    y = b.gemm(a, w, c=c, alpha=0.5, beta=2.0, bTranspose=True)
    # K x 2, +1 for alpha != 1, +1 for C with beta != 0, +1 for beta != 1
    return built(op, dt, b, y, {"a": values(r, dt, (3, 4), -1, 1)}, ulp(dt, 4 * 2 + 3))


@case("matmul")
def _matmul(op, dt):
    r, b = _start(op, dt)
    a, w = b.input("a", dt, [2, 3, 4]), b.input("b", dt, [4, 5])
    feeds = {"a": values(r, dt, (2, 3, 4), -1, 1), "b": values(r, dt, (4, 5), -1, 1)}
    return built(op, dt, b, b.matmul(a, w), feeds, ulp(dt, 4 * 2))  # as gemm: K x 2


def _recurrent_weights(r, b, dt, gates, hidden, in_size, dirs):
    lead = (dirs,) if dirs else ()
    weight = b.constant(values(r, dt, (*lead, gates * hidden, in_size), -0.5, 0.5))
    recurrent = b.constant(values(r, dt, (*lead, gates * hidden, hidden), -0.5, 0.5))
    bias = b.constant(values(r, dt, (*lead, gates * hidden), -0.5, 0.5))
    rbias = b.constant(values(r, dt, (*lead, gates * hidden), -0.5, 0.5))
    return weight, recurrent, bias, rbias


@case("gru")
def _gru(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [3, 2, 3])  # [steps, batch, inputSize]
    weight, recurrent, bias, rbias = _recurrent_weights(r, b, dt, 3, 4, 3, 2)
    h0 = b.constant(values(r, dt, (2, 2, 4), -0.5, 0.5))
    outs = b.gru(x, weight, recurrent, 3, 4, bias=bias, recurrentBias=rbias,
                 initialHiddenState=h0, returnSequence=True, direction="both")
    return built(op, dt, b, outs, {"x": values(r, dt, (3, 2, 3), -1, 1)}, atol(dt, _CHAIN[dt]))


@case("gruCell")
def _gru_cell(op, dt):
    r, b = _start(op, dt)
    x, h = b.input("x", dt, [2, 3]), b.input("h", dt, [2, 4])
    weight, recurrent, bias, rbias = _recurrent_weights(r, b, dt, 3, 4, 3, 0)
    y = b.gruCell(x, weight, recurrent, h, 4, bias=bias, recurrentBias=rbias, resetAfter=False)
    feeds = {"x": values(r, dt, (2, 3), -1, 1), "h": values(r, dt, (2, 4), -0.5, 0.5)}
    return built(op, dt, b, y, feeds, atol(dt, _CHAIN[dt]))


@case("lstm")
def _lstm(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [3, 2, 3])
    weight, recurrent, bias, rbias = _recurrent_weights(r, b, dt, 4, 4, 3, 1)
    peephole = b.constant(values(r, dt, (1, 12), -0.5, 0.5))
    outs = b.lstm(x, weight, recurrent, 3, 4, bias=bias, recurrentBias=rbias,
                  peepholeWeight=peephole, returnSequence=True)
    return built(op, dt, b, outs, {"x": values(r, dt, (3, 2, 3), -1, 1)}, atol(dt, _CHAIN[dt]))


@case("lstmCell")
def _lstm_cell(op, dt):
    r, b = _start(op, dt)
    x, h, c = b.input("x", dt, [2, 3]), b.input("h", dt, [2, 4]), b.input("c", dt, [2, 4])
    weight, recurrent, bias, rbias = _recurrent_weights(r, b, dt, 4, 4, 3, 0)
    outs = b.lstmCell(x, weight, recurrent, h, c, 4, bias=bias, recurrentBias=rbias)
    feeds = {"x": values(r, dt, (2, 3), -1, 1), "h": values(r, dt, (2, 4), -0.5, 0.5),
             "c": values(r, dt, (2, 4), -0.5, 0.5)}
    return built(op, dt, b, outs, feeds, atol(dt, _CHAIN[dt]))


@case("resample2d")
def _resample(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [1, 2, 3, 4])
    if dt == "float32":  # linear, by scales
        y = b.resample2d(x, mode="linear", scales=[2.0, 1.5])
    else:  # nearest neighbour, by sizes
        y = b.resample2d(x, mode="nearest-neighbor", sizes=[6, 8])
    # Linear interpolation is two lerps per axis (4 ULP); nearest neighbour copies.
    return built(op, dt, b, y, {"x": values(r, dt, (1, 2, 3, 4), 0.5, 2)},  # no cancellation
                 ulp(dt, 4 if dt == "float32" else 0))


@case("softmax")
def _softmax(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [2, 5])
    return built(op, dt, b, b.softmax(x, 1), {"x": values(r, dt, (2, 5), -3, 3)},
                 ulp(dt, 5 * 3 + 3))


_REDUCTION_RANGE = {"reduceLogSum": (0.5, 3), "reduceProduct": (0.5, 1.5)}


@case("reduceL1", "reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMax", "reduceMean",
      "reduceMin", "reduceProduct", "reduceSum", "reduceSumSquare")
def _reduce(op, dt):
    r, b = _start(op, dt)
    x = b.input("x", dt, [2, 3, 4])
    lo, hi = _REDUCTION_RANGE.get(op, (-2, 2))
    if dt not in FLOATS:
        lo, hi = (1, 3) if op == "reduceProduct" else (-5, 5)
    y = getattr(b, op)(x, axes=[0, 2], keepDimensions=dt == "float32")
    n = 2 * 4  # elements reduced into each result
    budget = {"reduceL2": 2 * n + 1, "reduceMax": 0, "reduceMin": 0,
              # the sum's n, plus the log's and exp's own error
              "reduceLogSum": n + 18, "reduceLogSumExp": n + 18 + 32}.get(op, n)
    return built(op, dt, b, y, {"x": values(r, dt, (2, 3, 4), lo, hi)},
                 ulp(dt, budget) if dt in FLOATS else exact())
