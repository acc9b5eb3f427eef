"""A few ONNX ops computed directly with numpy, where numpy's result is ONNX's exactly.

Folding a node through ONNX's reference evaluator builds a one-node model and an evaluator for
it, about 0.3 ms a node: unrolled loops fold their counters and conditions thousands of times.
The ops here (comparisons, logic, add/sub/mul on matching numeric types, Identity, Max/Min,
Cast from bool and integers) are the ones such folds are made of; numpy computes each with
ONNX's broadcasting and types (integers wrap, as in ONNX Runtime). Anything else, or inputs
these rules do not cover (mismatched types, a missing attribute), gives None: the caller then
uses the reference evaluator.
"""
from __future__ import annotations

import numpy as np
import onnx

__all__ = ["computed", "SIMPLE_OPS"]

_COMPARE = {"Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
            "GreaterOrEqual": np.greater_equal, "Equal": np.equal}
_LOGIC = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}
_ARITH = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}
_EXTREME = {"Max": np.maximum, "Min": np.minimum}  # NaN propagates in both, as in ONNX Runtime
SIMPLE_OPS = {"Identity", "Not", "Cast", *_COMPARE, *_LOGIC, *_ARITH, *_EXTREME}
_NUMERIC = "iuf"


def computed(node: onnx.NodeProto, args: list[np.ndarray]) -> np.ndarray | None:
    """The one result of `node` (default domain) on `args`, or None when not computed here."""
    op = node.op_type
    if op not in SIMPLE_OPS or len(node.output) != 1 or any(a is None for a in args):
        return None
    kinds = {a.dtype.kind for a in args}
    same = len({a.dtype for a in args}) == 1
    if op == "Identity" and len(args) == 1:
        return args[0].copy()  # as the reference evaluator gives it: a value of its own
    if op == "Not" and len(args) == 1 and kinds == {"b"}:
        return np.logical_not(args[0])
    if op in _LOGIC and len(args) == 2 and kinds == {"b"}:
        return _LOGIC[op](*args)
    if len(args) == 2 and same and kinds <= set(_NUMERIC):
        if op in _COMPARE:
            return _COMPARE[op](*args)
        with np.errstate(all="ignore"):  # integers wrap, as in ONNX Runtime
            if op in _ARITH:
                return _ARITH[op](*args)
            if op in _EXTREME:
                return _EXTREME[op](*args)
    if op == "Cast" and len(args) == 1 and kinds <= set("biu"):  # exact from these
        to = next((a.i for a in node.attribute if a.name == "to"
                   and a.type == onnx.AttributeProto.INT), None)
        if to not in _CASTS:
            return None
        with np.errstate(all="ignore"):
            return args[0].astype(_CASTS[to])
    return None


# Cast targets with a numpy type of their own (no float8, 4-bit, bfloat16 or strings).
_CASTS = {t: np.dtype(d) for t, d in [
    (onnx.TensorProto.BOOL, "bool"), (onnx.TensorProto.INT8, "int8"),
    (onnx.TensorProto.UINT8, "uint8"), (onnx.TensorProto.INT16, "int16"),
    (onnx.TensorProto.UINT16, "uint16"), (onnx.TensorProto.INT32, "int32"),
    (onnx.TensorProto.UINT32, "uint32"), (onnx.TensorProto.INT64, "int64"),
    (onnx.TensorProto.UINT64, "uint64"), (onnx.TensorProto.FLOAT16, "float16"),
    (onnx.TensorProto.FLOAT, "float32"), (onnx.TensorProto.DOUBLE, "float64")]}
