"""One generated graph per (op, data type): the cases the browser suite runs in Chromium and on
our ONNX executor, with the parity bounds each output is held to.

`make_case(op, data_type)` builds the graph for that op with its main operand (`input`, `a`,
`inputs`, or `trueValue` for where) of that data type. Data operands are graph inputs; weights,
indices and quantization parameters are constants, as in converted models. Values are seeded
and chosen inside each op's domain (positive for log and sqrt, no ties for argMax ...).

Bounds follow shared/reference/tolerances.md: ULP budgets for the ops it lists; for the others
the budget is written next to the op with its reason. Integer results are exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from converter.ops.builder import GraphBuilder
from converter.ir import Graph
from converter.verification.parity import Bounds

FLOATS = ("float32", "float16")


@dataclass
class Case:
    op: str
    data_type: str
    graph: Graph
    feeds: dict[str, np.ndarray]
    bounds: Bounds


CASES: dict[str, Callable[[str, str], Case]] = {}


def case(*ops: str):
    def register(fn):
        for name in ops:
            CASES[name] = fn
        return fn
    return register


def make_case(op: str, data_type: str) -> Case:
    from . import op_cases_layers, op_cases_shape  # noqa: F401  (they register their ops)

    return CASES[op](op, data_type)


def case_ops() -> list[str]:
    from . import op_cases_layers, op_cases_shape  # noqa: F401

    return sorted(CASES)


# -- values and bounds -----------------------------------------------------------------------
def rng(op: str, dt: str) -> np.random.Generator:
    # A seed from the case's name (not hash(), which changes between runs).
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(f"{op}/{dt}")))


def values(r: np.random.Generator, dt: str, shape, lo=-2.0, hi=2.0) -> np.ndarray:
    """Uniform floats in [lo, hi), or integers in [lo, hi] clipped to the type's range."""
    np_type = np.dtype({"int4": "int8", "uint4": "uint8"}.get(dt, dt))
    if np_type.kind == "f":
        return r.uniform(lo, hi, shape).astype(np_type)
    info = np.iinfo(np_type)
    lo, hi = max(int(lo), info.min), min(int(hi), info.max)
    return r.integers(lo, hi + 1, shape).astype(np_type)


def exact() -> Bounds:
    return Bounds(exact=True)


def ulp(dt: str, f32: int, f16: int | None = None) -> Bounds:
    if dt not in FLOATS:
        return exact()
    return Bounds(ulp=f32 if dt == "float32" or f16 is None else f16)


def atol(dt: str, value: float) -> Bounds:
    """An absolute bound, for results near zero where ULPs say nothing (rtol 0)."""
    return Bounds(atol=value, rtol=0.0) if dt in FLOATS else exact()


def built(op: str, dt: str, b: GraphBuilder, outputs, feeds: dict, bounds: Bounds) -> Case:
    if not isinstance(outputs, dict):
        outputs = {"y": outputs} if not isinstance(outputs, list) else \
            {f"y{i}": o for i, o in enumerate(outputs)}
    return Case(op, dt, b.build(outputs), feeds, bounds)


def unary(op, dt, lo=-2.0, hi=2.0, shape=(2, 3, 4), **options):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    x = b.input("x", dt, shape)
    feeds = {"x": values(r, dt, shape, lo, hi)}
    return b, getattr(b, op)(x, **options), feeds


# -- element-wise unary ----------------------------------------------------------------------
# Budgets (float32 / float16) from tolerances.md where it lists the op; otherwise:
#   exp: 32 / 2 (a polynomial approximation; the WPT conformance suite allows 32 in float32),
#   sqrt 1, reciprocal 2 (IEEE-rounded or one Newton step), tanh 16 (as the WPT suite),
#   sin/cos/tan/log/erf: an absolute 1/1024, since their results cross zero where ULP counts
#   explode (the WPT suite judges them the same way); data movement and rounding ops 0.
_UNARY = {
    "abs": (-4, 4, lambda dt: ulp(dt, 0)), "neg": (-4, 4, lambda dt: ulp(dt, 0)),
    "ceil": (-4, 4, lambda dt: ulp(dt, 0)), "floor": (-4, 4, lambda dt: ulp(dt, 0)),
    "sign": (-3, 3, lambda dt: ulp(dt, 0)), "identity": (-8, 8, lambda dt: ulp(dt, 0)),
    "relu": (-8, 8, lambda dt: ulp(dt, 0)),
    "exp": (-4, 4, lambda dt: ulp(dt, 32, 2)), "sqrt": (0.05, 9, lambda dt: ulp(dt, 1)),
    "tanh": (-3, 3, lambda dt: ulp(dt, 16)),
    "log": (0.05, 9, lambda dt: atol(dt, 1 / 1024)), "sin": (-4, 4, lambda dt: atol(dt, 1 / 1024)),
    "cos": (-4, 4, lambda dt: atol(dt, 1 / 1024)), "tan": (-1.2, 1.2, lambda dt: atol(dt, 1 / 1024)),
    "erf": (-2.5, 2.5, lambda dt: atol(dt, 1 / 1024)),
    "sigmoid": (-6, 6, lambda dt: ulp(dt, 34, 3)), "softplus": (-5, 5, lambda dt: ulp(dt, 18)),
    "softsign": (-5, 5, lambda dt: ulp(dt, 3)),
    # Below -1.5, gelu's 1 + erf(x / sqrt 2) cancels: float32 evaluations of the spec's formula
    # lose ~100 ULP there on both sides (seen: 117 ULP from exact at x = -2.95 in both).
    "gelu": (-1.5, 3, lambda dt: ulp(dt, 18)),
    "hardSwish": (-4, 4, lambda dt: ulp(dt, 4)),
}


@case(*_UNARY)
def _unary_case(op, dt):
    lo, hi, bounds = _UNARY[op]
    if dt == "uint8":
        lo = 0
    b, y, feeds = unary(op, dt, lo, hi)
    return built(op, dt, b, y, feeds, bounds(dt))


@case("reciprocal")
def _reciprocal(op, dt):
    b, y, feeds = unary(op, dt, 0.25, 4)
    feeds["x"] *= np.where(np.arange(24).reshape(2, 3, 4) % 2, 1, -1).astype(feeds["x"].dtype)
    return built(op, dt, b, y, feeds, ulp(dt, 2))


@case("roundEven")
def _round_even(op, dt):
    b, y, feeds = unary(op, dt, -4, 4)
    feeds["x"].reshape(-1)[:12] = np.arange(-6, 6) + 0.5  # ties go to the even neighbour
    return built(op, dt, b, y, feeds, ulp(dt, 0))


_OPTIONS = {  # non-default options, so that emitting them is tested too
    "elu": ({"alpha": 0.5}, 18), "leakyRelu": ({"alpha": 0.2}, 1),
    "linear": ({"alpha": 2.0, "beta": -1.0}, 2), "hardSigmoid": ({"alpha": 0.3, "beta": 0.4}, 2),
    "clamp": ({"minValue": -1.0, "maxValue": 1.5}, 0),
}


@case(*_OPTIONS)
def _with_options(op, dt):
    options, budget = _OPTIONS[op]
    b, y, feeds = unary(op, dt, -4, 4, **options)
    return built(op, dt, b, y, feeds, ulp(dt, budget))


@case("isNaN", "isInfinite")
def _classify(op, dt):
    b, y, feeds = unary(op, dt, -4, 4, shape=(8,))
    feeds["x"][:4] = [np.nan, np.inf, -np.inf, 0]
    return built(op, dt, b, y, feeds, exact())


@case("logicalNot")
def _logical_not(op, dt):
    b, y, feeds = unary(op, dt, 0, 3, shape=(2, 4))
    feeds["x"].reshape(-1)[:2] = [255, 0]  # any non-zero is true
    return built(op, dt, b, y, feeds, exact())


# -- element-wise binary ---------------------------------------------------------------------
def binary(op, dt, a_range, b_range, b_shape=(3, 1)):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    x, z = b.input("a", dt, [2, 3, 4]), b.input("b", dt, list(b_shape))
    feeds = {"a": values(r, dt, (2, 3, 4), *a_range), "b": values(r, dt, b_shape, *b_range)}
    return b, getattr(b, op)(x, z), feeds


@case("add", "sub", "mul", "max", "min")
def _arithmetic(op, dt):
    b, y, feeds = binary(op, dt, (-20, 20), (-20, 20))
    budget = 0 if op in ("max", "min") else 1
    return built(op, dt, b, y, feeds, ulp(dt, budget))


@case("div")
def _div(op, dt):
    b, y, feeds = binary(op, dt, (-20, 20), (1, 5))
    feeds["b"][0] = -feeds["b"][0]  # a negative divisor, for integer rounding
    # Division is correctly rounded in IEEE arithmetic; 2 allows a reciprocal and a multiply.
    return built(op, dt, b, y, feeds, ulp(dt, 2))


@case("pow")
def _pow(op, dt):
    if dt in FLOATS:
        b, y, feeds = binary(op, dt, (0.5, 2), (-2, 2))
    else:
        b, y, feeds = binary(op, dt, (-3, 3), (0, 3))
    # pow is exp(b * log(a)) in most kernels: the error of exp on a product (32 / 2 ULP).
    return built(op, dt, b, y, feeds, ulp(dt, 32, 2))


@case("equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual")
def _compare(op, dt):
    b, y, feeds = binary(op, dt, (-2, 2), (-2, 2))
    if dt in FLOATS:  # small integers as floats, so that equal values occur
        feeds = {k: np.round(v) for k, v in feeds.items()}
    return built(op, dt, b, y, feeds, exact())


@case("logicalAnd", "logicalOr", "logicalXor")
def _logical(op, dt):
    b, y, feeds = binary(op, dt, (0, 2), (0, 1))
    feeds["a"].reshape(-1)[:3] = 255
    return built(op, dt, b, y, feeds, exact())


@case("where")
def _where(op, dt):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    c = b.input("condition", "uint8", [2, 3])
    t, f = b.input("t", dt, [2, 3]), b.input("f", dt, [3])
    feeds = {"condition": np.array([[0, 1, 5], [255, 0, 0]], np.uint8),
             "t": values(r, dt, (2, 3), -9, 9), "f": values(r, dt, (3,), -9, 9)}
    return built(op, dt, b, b.where(c, t, f), feeds, exact())


@case("prelu")
def _prelu(op, dt):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    x = b.input("x", dt, [2, 3, 4])
    slope = b.constant(values(r, dt, (4,), 0.05, 0.5))
    return built(op, dt, b, b.prelu(x, slope), {"x": values(r, dt, (2, 3, 4), -4, 4)},
                 ulp(dt, 1))


# -- quantization ----------------------------------------------------------------------------
@case("quantizeLinear")
def _quantize(op, dt):
    """`dt` is the output (zeroPoint) type; the input is float32."""
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    x = b.input("x", "float32", [2, 4])
    scale = b.constant(np.array([[0.5, 0.25, 1.0, 2.0]], np.float32))
    if dt in ("int4", "uint4"):  # packed, as 4-bit constants are held
        zero = b.constant(dt, [1, 4], [0, 3, -5 if dt == "int4" else 10, 1])
    else:
        zero = b.constant(np.array([[0, 3, 10, 1]], dt))
    feeds = {"x": values(r, "float32", (2, 4), -3, 3)}
    feeds["x"][0] = [0.25, 0.375, 2.5, -3.0]  # exact halves: round half to even
    return built(op, dt, b, b.quantizeLinear(x, scale, zero), feeds, exact())


@case("dequantizeLinear")
def _dequantize(op, dt):
    r = rng(op, dt)
    b = GraphBuilder(f"{op}_{dt}")
    four_bit = dt in ("int4", "uint4")
    lo, hi = {"int4": (-8, 7), "uint4": (0, 15)}.get(dt, (0, 20))
    data = values(r, dt, (2, 4), lo, hi)
    if four_bit:  # 4-bit data comes packed in constants, as MatMulNBits weights do
        x = b.constant(dt, [2, 4], data)
        feeds = {}
    else:
        x = b.input("x", dt, [2, 4])
        feeds = {"x": data}
    scale = b.constant(np.array([[0.5, 0.25, 1.0, 2.0]], np.float32))
    zero = b.constant(dt, [1, 4], [0, 3, -2 if dt == "int4" else 2, 1]) if four_bit else \
        b.constant(np.array([[0, 3, 2, 1]], dt))
    y = b.dequantizeLinear(x, scale, zero)
    # (x - zeroPoint) * scale: exact for these small integers and power-of-two scales.
    return built(op, dt, b, y, feeds, ulp("float32", 0))
