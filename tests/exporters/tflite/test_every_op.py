"""Every op of the catalogue, once: a generated one-op WebNN graph exported to .tflite runs on
LiteRT (builtin kernels and XNNPACK) and agrees with our ONNX executor on seeded inputs, under
the op's ULP budget from tolerances.md.

Ops the policy does not list get a budget with its reason next to it. XNNPACK computes exp,
log and tanh with polynomial approximations (measured: exp up to 15 ULP, log an absolute error
near 6e-8), so ops built on them state XNNPACK's own bound. The family test files check the
options and hand-computed values; this file guarantees no op is left out.
"""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.exporters.tflite import exportable_ops
from converter.ops.registry import all_ops

from .helpers import check, rand

RNG = np.random.default_rng(2024)
SHAPE = [2, 3, 4]


def _unary(op, low=-2.0, high=2.0, dt="float32", **options):
    def build(b):
        x = b.input("x", dt, SHAPE)
        return getattr(b, op)(x, **options), {"x": rand(RNG, SHAPE, dt, low, high)}
    return build


def _binary(op, low=-4.0, high=4.0, dt="float32", b_shape=(4,)):
    def build(b):
        x, y = b.input("a", dt, SHAPE), b.input("b", dt, list(b_shape))
        return getattr(b, op)(x, y), {"a": rand(RNG, SHAPE, dt, low, high),
                                      "b": rand(RNG, b_shape, dt, low, high)}
    return build


def _build(fn, **inputs):
    """A graph of `fn(b, *inputs)` over graph inputs given as name -> (type, array)."""
    def build(b):
        operands = [b.input(name, dt, list(value.shape)) for name, (dt, value) in inputs.items()]
        return fn(b, *operands), {name: value for name, (_, value) in inputs.items()}
    return build


def _f(*shape, low=-1.0, high=1.0):
    return ("float32", rand(RNG, shape, "float32", low, high))


# op -> (graph builder, checking bounds). ULP budgets from tolerances.md unless noted.
EXAMPLES = {
    # element-wise: 1 ULP for add/sub/mul; div and min/max are exactly rounded (0 / 1 ULP)
    "add": (_binary("add"), dict(ulp=1)),
    "sub": (_binary("sub"), dict(ulp=1)),
    "mul": (_binary("mul"), dict(ulp=1)),
    "div": (_binary("div", low=0.5, high=4), dict(ulp=1)),
    "max": (_binary("max"), dict(ulp=0)),
    "min": (_binary("min"), dict(ulp=0)),
    "pow": (_binary("pow", low=0.5, high=2), dict(ulp=2)),  # pow: correctly rounded +-1 ULP each
    "equal": (_binary("equal", dt="int32", low=0, high=2), {}),
    "notEqual": (_binary("notEqual", dt="int32", low=0, high=2), {}),
    "greater": (_binary("greater"), {}),
    "greaterOrEqual": (_binary("greaterOrEqual", dt="int32", low=0, high=2), {}),
    "lesser": (_binary("lesser"), {}),
    "lesserOrEqual": (_binary("lesserOrEqual", dt="int32", low=0, high=2), {}),
    "logicalAnd": (_binary("logicalAnd", dt="uint8", low=0, high=2), {}),
    "logicalOr": (_binary("logicalOr", dt="uint8", low=0, high=2), {}),
    "logicalXor": (_binary("logicalXor", dt="uint8", low=0, high=2), {}),
    "logicalNot": (_unary("logicalNot", dt="uint8", low=0, high=2), {}),
    "isNaN": (_unary("isNaN"), {}),
    "isInfinite": (_unary("isInfinite"), {}),
    "abs": (_unary("abs"), dict(ulp=0)),
    "ceil": (_unary("ceil"), dict(ulp=0)),
    "floor": (_unary("floor"), dict(ulp=0)),
    "neg": (_unary("neg"), dict(ulp=0)),
    "roundEven": (_unary("roundEven", low=-4, high=4), dict(ulp=0)),
    "sign": (_unary("sign"), dict(ulp=0)),
    "identity": (_unary("identity"), dict(ulp=0)),
    "reciprocal": (_unary("reciprocal", low=0.5, high=2), dict(ulp=1)),
    "sqrt": (_unary("sqrt", low=0.1, high=4), dict(ulp=1)),
    # cos/sin/exp: the runtimes' libm results, 2 ULP apart at most; XNNPACK's are
    # polynomials (sin/cos: 5 ULP measured, exp: 15) with an absolute error near 1.6e-7, so
    # sin and cos are judged away from their zeros
    "cos": (_unary("cos", low=-1.2, high=1.2), dict(ulp=2, xnnpack_ulp=8)),
    "sin": (_unary("sin", low=0.3, high=2.8), dict(ulp=2, xnnpack_ulp=8)),
    "exp": (_unary("exp"), dict(ulp=2, xnnpack_ulp=16)),
    # log: inputs away from 1, where the result is not near 0; XNNPACK's log has an absolute
    # error near 6e-8
    "log": (_unary("log", low=2, high=8), dict(ulp=2, xnnpack_atol=1e-7, rtol=1e-6)),
    # tan = sin / cos: two libm roundings and a division, each up to 1 ULP of its own value
    "tan": (_unary("tan", low=-1, high=1), dict(ulp=6)),
    # erf: written out (series below 0.5, GELU above); within the gelu budget
    "erf": (_unary("erf", low=-3, high=3), dict(ulp=18)),
    "where": (_build(lambda b, c, t, f: b.where(c, t, f),
                     c=("uint8", RNG.integers(0, 3, (2, 3, 4)).astype(np.uint8)),
                     t=_f(2, 3, 4), f=_f(3, 4)), dict(ulp=0)),
    "cast": (_unary("cast", low=-100, high=100, dataType="int32"), {}),
    # activations
    "clamp": (_unary("clamp", minValue=-0.5, maxValue=1.25), dict(ulp=0)),
    "elu": (_unary("elu", low=-3, high=-0.1, alpha=0.7), dict(ulp=18)),
    "gelu": (_unary("gelu", low=-1.5, high=3), dict(ulp=18)),
    "hardSigmoid": (_unary("hardSigmoid", low=-4, high=4, alpha=0.3, beta=0.4), dict(ulp=2)),
    "hardSwish": (_unary("hardSwish", low=-4, high=4), dict(ulp=4)),
    "leakyRelu": (_unary("leakyRelu", alpha=0.2), dict(ulp=1)),
    "linear": (_unary("linear", low=0, high=2, alpha=1.5, beta=0.25), dict(ulp=2)),
    "prelu": (_binary("prelu", b_shape=(3, 1)), dict(ulp=1)),
    "relu": (_unary("relu"), dict(ulp=0)),
    # sigmoid: LiteRT's LOGISTIC (builtin and XNNPACK) has an absolute error near 6e-8, which
    # is far more than 34 ULP of outputs near 0 (54 and 177 ULP measured at 0.005), so it is
    # judged by that absolute bound
    "sigmoid": (_unary("sigmoid", low=-6, high=6), dict(atol=1e-7)),
    "softmax": (_unary("softmax", axis=1), dict(ulp=3 * 3 + 3, xnnpack_ulp=3 * 3 + 3 + 16)),
    # softplus within its 18 ULP; XNNPACK's exp carries its 15 ULP into the result
    "softplus": (_unary("softplus", low=-10, high=10), dict(ulp=18)),
    "softsign": (_unary("softsign"), dict(ulp=3)),
    # tanh: not in the policy; libm's tanh and the kernels' are within 4 ULP of each other,
    # XNNPACK's rational approximation within 16
    "tanh": (_unary("tanh"), dict(ulp=4, xnnpack_ulp=16)),
    # convolution: kh * kw * (cin / groups) * 2, +1 for the bias add
    "conv2d": (_build(lambda b, x: b.conv2d(
        x, b.constant(rand(RNG, [4, 3, 3, 3], "float32", 0, 1)), padding=[1, 1, 1, 1],
        bias=b.constant(rand(RNG, [4], "float32", 0, 1))), x=_f(1, 3, 6, 7, low=0)),
        dict(ulp=3 * 3 * 3 * 2 + 1)),
    "convTranspose2d": (_build(lambda b, x: b.convTranspose2d(
        x, b.constant(rand(RNG, [3, 2, 3, 3], "float32", 0, 1)), strides=[2, 2],
        padding=[1, 1, 1, 1]), x=_f(1, 3, 4, 5, low=0)), dict(ulp=3 * 3 * 3 * 2)),
    # pools: a window's worth of roundings (sum of 9 values, one division)
    "averagePool2d": (_build(lambda b, x: b.averagePool2d(
        x, windowDimensions=[3, 3], padding=[1, 1, 1, 1]), x=_f(1, 3, 6, 7, low=0)),
        dict(ulp=9 + 2)),
    "l2Pool2d": (_build(lambda b, x: b.l2Pool2d(
        x, windowDimensions=[2, 2], strides=[2, 2]), x=_f(1, 3, 6, 8, low=0)), dict(ulp=2 * 4 + 3)),
    "maxPool2d": (_build(lambda b, x: b.maxPool2d(
        x, windowDimensions=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]), x=_f(1, 3, 7, 7)),
        dict(ulp=0)),
    # matmul/gemm: K * 2
    "matmul": (_build(lambda b, x, y: b.matmul(x, y), a=_f(2, 3, 4, low=0), b=_f(4, 5, low=0)),
               dict(ulp=4 * 2)),
    "gemm": (_build(lambda b, x: b.gemm(x, b.constant(rand(RNG, [5, 4], "float32", 0, 1)),
                                        c=b.constant(rand(RNG, [5], "float32", 0, 1)),
                                        bTranspose=True), a=_f(3, 4, low=0)), dict(ulp=4 * 2 + 1)),
    # normalizations: the spec's formula in the spec's order on both sides; mean and variance
    # are reductions of 20 elements, and the results are judged away from zero
    "batchNormalization": (_build(lambda b, x: b.batchNormalization(
        x, b.constant(np.array([0.1, -0.2, 0.3], np.float32)),
        b.constant(np.array([0.5, 1.0, 2.0], np.float32)),
        bias=b.constant(np.array([3.0, 3.0, 3.0], np.float32))), x=_f(2, 3, 2, 2)), dict(ulp=6)),
    "instanceNormalization": (_build(lambda b, x: b.instanceNormalization(
        x, bias=b.constant(np.full(3, 4.0, np.float32))), x=_f(2, 3, 4, 5)), dict(ulp=2 * 20)),
    "layerNormalization": (_build(lambda b, x: b.layerNormalization(
        x, bias=b.constant(np.full((3, 4), 4.0, np.float32))), x=_f(2, 3, 4)), dict(ulp=2 * 12)),
    # reductions: the number of reduced elements (L2: 2n + 1); logs and exps as above
    "reduceL1": (_unary("reduceL1", axes=[1]), dict(ulp=3)),
    "reduceL2": (_unary("reduceL2", axes=[1]), dict(ulp=2 * 3 + 1)),
    "reduceLogSum": (_unary("reduceLogSum", low=1, high=3, axes=[1]),
                     dict(ulp=3 + 2, xnnpack_atol=2e-7, rtol=1e-6)),
    "reduceLogSumExp": (_unary("reduceLogSumExp", axes=[1]),
                        dict(ulp=3 + 4, xnnpack_atol=2e-7, rtol=1e-6)),
    "reduceMax": (_unary("reduceMax", axes=[0, 2]), dict(ulp=0)),
    "reduceMean": (_unary("reduceMean", axes=[2]), dict(ulp=4 + 1)),
    "reduceMin": (_unary("reduceMin"), dict(ulp=0)),
    "reduceProduct": (_unary("reduceProduct", low=0.5, high=1.5, axes=[1]), dict(ulp=3)),
    "reduceSum": (_unary("reduceSum", low=0, high=1, axes=[1, 2], keepDimensions=True),
                  dict(ulp=12)),
    "reduceSumSquare": (_unary("reduceSumSquare", axes=[2]), dict(ulp=2 * 4)),
    "argMax": (_unary("argMax", axis=1), {}),
    "argMin": (_unary("argMin", axis=2, keepDimensions=True, outputDataType="int64"), {}),
    "cumulativeSum": (_unary("cumulativeSum", low=0, high=1, axis=2), dict(ulp=4)),
    # data movement: exact
    "concat": (_build(lambda b, x, y: b.concat([x, y], 1), x=_f(2, 3, 4), y=_f(2, 1, 4)), {}),
    "expand": (_build(lambda b, x: b.expand(x, [2, 3, 4]), x=_f(3, 1)), {}),
    "pad": (_unary("pad", beginningPadding=[0, 1, 2], endingPadding=[1, 0, 1], value=2.5), {}),
    "reshape": (_unary("reshape", newShape=[4, 6]), {}),
    "reverse": (_unary("reverse", axes=[0, 2]), {}),
    "slice": (_unary("slice", starts=[0, 1, 1], sizes=[2, 2, 3], strides=[1, 1, 2]), {}),
    "split": (_build(lambda b, x: b.split(x, [1, 3], axis=2)[1], x=_f(2, 3, 4)), {}),
    "tile": (_unary("tile", repetitions=[1, 2, 2]), {}),
    "transpose": (_unary("transpose", permutation=[2, 0, 1]), {}),
    "triangular": (_unary("triangular", upper=False, diagonal=1), {}),
    "gather": (_build(lambda b, x, i: b.gather(x, i, axis=1), x=_f(2, 3, 4),
                      i=("int32", np.array([[2, -1], [0, 5]], np.int32))), {}),
    "gatherElements": (_build(lambda b, x, i: b.gatherElements(x, i, axis=2), x=_f(2, 3, 4),
                              i=("int64", RNG.integers(-4, 4, (2, 3, 2)))), {}),
    "gatherND": (_build(lambda b, x, i: b.gatherND(x, i), x=_f(2, 3, 4),
                        i=("uint32", np.array([[1, 2], [0, 0]], np.uint32))), {}),
    "scatterElements": (_build(lambda b, x, i, u: b.scatterElements(x, i, u, axis=1),
                               x=_f(2, 3, 4), i=("int32", np.array([[[2, 0, 1, -1]]] * 2,
                                                                    np.int32)),
                               u=_f(2, 1, 4)), {}),
    "scatterND": (_build(lambda b, x, i, u: b.scatterND(x, i, u), x=_f(2, 3, 4),
                         i=("int32", np.array([[1, 2], [0, -3]], np.int32)), u=_f(2, 4)), {}),
    # resample2d: nearest is exact; linear is two interpolations whose weights both sides
    # compute from float32 ratios, so it is judged by an absolute bound on [0, 1) values
    "resample2d": (_build(lambda b, x: b.resample2d(x, mode="linear", sizes=[7, 5]),
                          x=_f(1, 2, 4, 3, low=0)), dict(atol=1e-6)),
    # quantization: one rounding (dequantize), exact integers (quantize)
    "dequantizeLinear": (_build(lambda b, x: b.dequantizeLinear(
        x, b.constant(np.array([[0.5], [0.25]], np.float32)),
        b.constant(np.array([[3], [-2]], np.int8))),
        x=("int8", RNG.integers(-128, 128, (2, 5)).astype(np.int8))), dict(ulp=0)),
    "quantizeLinear": (_build(lambda b, x: b.quantizeLinear(
        x, b.constant(np.array([[0.1]], np.float32)), b.constant(np.array([[10]], np.uint8))),
        x=_f(3, 4, low=-3, high=30)), {}),
    # recurrent: not in the policy; 3 steps of matmuls and activations, judged by an absolute
    # bound on values in (-1, 1)
    "gru": (_build(lambda b, x: b.gru(
        x, b.constant(rand(RNG, [1, 9, 4], "float32", -0.5, 0.5)),
        b.constant(rand(RNG, [1, 9, 3], "float32", -0.5, 0.5)), 3, 3,
        returnSequence=True)[1], x=_f(3, 2, 4)), dict(atol=2e-6)),
    "gruCell": (_build(lambda b, x, h: b.gruCell(
        x, b.constant(rand(RNG, [9, 4], "float32", -0.5, 0.5)),
        b.constant(rand(RNG, [9, 3], "float32", -0.5, 0.5)), h, 3), x=_f(2, 4), h=_f(2, 3)),
        dict(atol=2e-6)),
    "lstm": (_build(lambda b, x: b.lstm(
        x, b.constant(rand(RNG, [1, 12, 4], "float32", -0.5, 0.5)),
        b.constant(rand(RNG, [1, 12, 3], "float32", -0.5, 0.5)), 3, 3)[1], x=_f(3, 2, 4)),
        dict(atol=2e-6)),
    "lstmCell": (_build(lambda b, x, h, c: b.lstmCell(
        x, b.constant(rand(RNG, [12, 4], "float32", -0.5, 0.5)),
        b.constant(rand(RNG, [12, 3], "float32", -0.5, 0.5)), h, c, 3)[0],
        x=_f(2, 4), h=_f(2, 3), c=_f(2, 3)), dict(atol=2e-6)),
}


def test_every_catalogue_op_has_an_example_and_an_export_rule():
    assert sorted(EXAMPLES) == sorted(all_ops())
    assert sorted(exportable_ops()) == sorted(all_ops())
    assert len(EXAMPLES) == 95


@pytest.mark.parametrize("op", sorted(EXAMPLES))
def test_op_on_litert_matches_the_onnx_executor(op):
    build, bounds = EXAMPLES[op]
    b = GraphBuilder(op)
    out, feeds = build(b)
    graph = b.build({"y": out})
    assert graph.operations[-1].op_type == op or op in {o.op_type for o in graph.operations}
    got = check(graph, feeds, **bounds)
    assert got["y"].shape == tuple(graph.outputs["y"].shape)
