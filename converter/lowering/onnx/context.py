"""The emitter that lowering rules write ONNX through.

A rule gets a LoweringContext and one WebNN Operation, emits ONNX nodes with `ctx.node(...)`
and returns the ONNX value names of the operation's results. The context hands out fresh
names (derived from the WebNN node name, so an ONNX node can be traced back to the operation
it came from), turns numbers and arrays into initializers, and knows which data types ONNX
Runtime's CPU kernels take (`typed`), so a rule states the op once and the context computes in
a wider type where the runtime has no kernel for the operand's own type.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ...errors import ConverterError, UnsupportedError
from ...ir import Operand, Operation
from . import kernels

__all__ = ["LoweringContext", "Keep", "ONNX_TYPES", "NUMPY_TYPES", "spec_cast"]

# WebNN data types, plus the extra types lowerings compute in (float64, bool, int16, uint16).
ONNX_TYPES: dict[str, int] = {
    "float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE,
    "int32": TensorProto.INT32, "uint32": TensorProto.UINT32, "int64": TensorProto.INT64,
    "uint64": TensorProto.UINT64, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
    "int16": TensorProto.INT16, "uint16": TensorProto.UINT16, "bool": TensorProto.BOOL,
    "int4": TensorProto.INT4, "uint4": TensorProto.UINT4,
}
NUMPY_TYPES: dict[str, np.dtype] = {
    k: np.dtype(v) for k, v in {
        "float32": np.float32, "float16": np.float16, "float64": np.float64, "int32": np.int32,
        "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "int8": np.int8,
        "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "bool": np.bool_,
    }.items()
}
# The names onnxruntime's kernel registry uses for them.
_KERNEL_NAMES = {"float32": "float", "float64": "double"}

# Wider types that hold every value of a type exactly, in order of preference.
_WIDER: dict[str, tuple[str, ...]] = {
    "int8": ("int16", "int32", "int64", "float64"),
    "uint8": ("int16", "uint16", "int32", "uint32", "int64", "uint64", "float64"),
    "int16": ("int32", "int64", "float64"),
    "uint16": ("int32", "uint32", "int64", "uint64", "float64"),
    "int32": ("int64", "float64"),
    "uint32": ("int64", "uint64", "float64"),
    "int64": (),
    "uint64": (),
    "float16": ("float32", "float64"),
    "float32": ("float64",),
    "float64": (),
    "bool": ("uint8", "int32"),
}
# The type with the same bits and the other signedness. Two's-complement add, sub and mul give
# the same bits either way, and moving data (where, gather, tile ...) never looks at them.
_SAME_BITS = {"uint64": "int64", "int64": "uint64", "uint32": "int32", "int32": "uint32",
              "uint8": "int8", "int8": "uint8", "uint16": "int16", "int16": "uint16"}
_INTEGER = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}


class Keep(str):
    """An input name that `typed` passes through as it is (an axes or shape input)."""


def spec_cast(x: float | int, data_type: str):
    """The spec's "cast" of an MLNumber to a data type: floats round to nearest (out of range
    gives +/-Infinity), integers clamp to the type's range and round half to even, NaN gives 0.
    Returns a numpy scalar of the data type."""
    dt = NUMPY_TYPES[data_type]
    if dt.kind == "f":
        if isinstance(x, int):
            try:
                x = float(x)  # rounds to nearest, as the cast does
            except OverflowError:  # beyond float64's range
                x = math.inf if x > 0 else -math.inf
        with np.errstate(over="ignore"):
            return dt.type(np.float64(x))
    info = np.iinfo(dt)
    if isinstance(x, float):
        if math.isnan(x):
            return dt.type(0)
        if math.isinf(x):
            return dt.type(info.max if x > 0 else info.min)
        x = int(round(min(max(x, float(info.min)), float(info.max))))  # round() is half-even
    return dt.type(min(max(int(x), int(info.min)), int(info.max)))


class LoweringContext:
    """Emits the ONNX nodes and initializers for one WebNN graph."""

    def __init__(self, opset: int, exact: bool = False):
        self.opset = opset
        self.exact = exact  # the executor's form (lower()'s `exact`)
        self.nodes: list = []
        self.initializers: list[TensorProto] = []
        self.types: dict[str, str] = {}  # value name -> data type, where known
        self.op: Operation | None = None  # the operation being lowered
        self._values: dict[int, str] = {}
        self._used: set[str] = set()
        self._counters: dict[str, int] = {}
        self._const_cache: dict[tuple, str] = {}

    # -- names ---------------------------------------------------------------------------------
    def reserve(self, name: str) -> None:
        self._used.add(name)

    def fresh(self, base: str) -> str:
        """A value or node name not used yet, derived from `base`."""
        if base not in self._used:
            self._used.add(base)
            return base
        n = self._counters.get(base, 0) + 1
        while f"{base}_{n}" in self._used:
            n += 1
        self._counters[base] = n
        self._used.add(f"{base}_{n}")
        return f"{base}_{n}"

    def bind(self, operand: Operand, value: str) -> None:
        """Record that `value` holds `operand` from now on."""
        self._values[id(operand)] = value
        self.types.setdefault(value, operand.data_type)

    def name_of(self, operand: Operand | None) -> str:
        """The ONNX value holding a WebNN operand ("" for an absent optional operand)."""
        if operand is None:
            return ""
        try:
            return self._values[id(operand)]
        except KeyError:
            raise ConverterError(f"operand '{operand.name}' is read before it is lowered",
                                 where=self._where()) from None

    def _where(self) -> str:
        return f"{self.op.op_type} '{self.op.name}'" if self.op is not None else "lowering"

    def _base(self, op_type: str) -> str:
        return f"{self.op.name}/{op_type}" if self.op is not None else op_type

    # -- nodes ---------------------------------------------------------------------------------
    def node(self, op_type: str, inputs: Sequence[str | None], *, outputs: int | list[str] = 1,
             dtype: str | None = None, **attrs: Any) -> Any:
        """Emit one node; returns its output name (a list when `outputs` is a count > 1 or a list).

        `dtype` records the result's data type for later `cast` calls; attrs that are None are
        left out, so a rule can pass optional attributes straight through.
        """
        base = self._base(op_type)
        if isinstance(outputs, int):
            names = [self.fresh(base) for _ in range(outputs)]
        else:
            names = list(outputs)
            self._used.update(names)
        ins = ["" if i is None else str(i) for i in inputs]
        while ins and ins[-1] == "":
            ins.pop()
        kept = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, ins, names, name=self.fresh(f"{base}#"),
                                           **kept))
        if dtype is not None:
            for n in names:
                self.types[n] = dtype
        if isinstance(outputs, int) and outputs == 1:
            return names[0]
        return names

    # -- constants -----------------------------------------------------------------------------
    def constant(self, value, dtype: str | None = None, *, name: str | None = None) -> str:
        """An initializer holding `value` (an ndarray, or anything np.asarray takes)."""
        arr = np.asarray(value, dtype=NUMPY_TYPES[dtype] if dtype else None)
        dt = dtype or _dtype_name(arr.dtype)
        key = None
        if name is None and arr.size <= 64:
            key = (dt, arr.shape, arr.tobytes())
            if key in self._const_cache:
                return self._const_cache[key]
        out = self.fresh(name or self._base("const"))
        tensor = numpy_helper.from_array(np.asarray(arr, order="C"), out)
        self.initializers.append(tensor)
        self.types[out] = dt
        if key is not None:
            self._const_cache[key] = out
        return out

    def scalar(self, value, dtype: str) -> str:
        """A rank-0 constant of `dtype`."""
        return self.constant(np.array(value, dtype=NUMPY_TYPES[dtype]), dtype)

    def int64s(self, values: Iterable[int]) -> str:
        """A 1-D int64 constant (shapes, axes, pads, starts ...)."""
        return self.constant(np.array(list(values), dtype=np.int64), "int64")

    # -- data types ----------------------------------------------------------------------------
    def supports(self, onnx_op: str, dtype: str, constraint: str | None = None) -> bool:
        return kernels.supports(onnx_op, _KERNEL_NAMES.get(dtype, dtype), self.opset, constraint)

    def compute_type(self, onnx_op: str, dtype: str, *, widen: str = "value",
                     constraint: str | None = None) -> str:
        """The type to run `onnx_op` in for operands of `dtype`.

        widen "value": only types that hold every value exactly (comparisons, min/max, abs ...);
        "modular": also integer types whose wrap-around arithmetic gives the same bits (add,
        sub, mul, sums); "bits": also the same-width type of the other signedness (ops that
        only move data).
        """
        candidates = [dtype]
        wider = _WIDER.get(dtype, ())
        if widen == "modular":
            wider = tuple(t for t in wider if t in _INTEGER) if dtype in _INTEGER else wider
        candidates += list(wider)
        if widen in ("modular", "bits") and dtype in _SAME_BITS:
            candidates.append(_SAME_BITS[dtype])
        for ct in candidates:
            if self.supports(onnx_op, ct, constraint):
                return ct
        raise UnsupportedError(
            [f"ONNX Runtime has no CPU kernel for {onnx_op} on {dtype}, and no wider type "
             f"holds its values exactly"], where=self._where())

    def cast(self, value: str, to: str, frm: str | None = None) -> str:
        """`value` as data type `to` (no node when it already is)."""
        frm = frm or self.types.get(value)
        if frm == to:
            return value
        return self.node("Cast", [value], to=ONNX_TYPES[to], dtype=to)

    def typed(self, onnx_op: str, inputs: Sequence[str | None], dtype: str, *,
              widen: str = "value", result: str | None = None, constraint: str | None = None,
              **attrs: Any) -> str:
        """Emit `onnx_op` on inputs of `dtype`, in a wider type when ORT needs one.

        Inputs wrapped in Keep are passed as they are. The result is cast back to `dtype`, or,
        when `result` names a type (Equal's "bool"), left as the node gives it.
        """
        ct = self.compute_type(onnx_op, dtype, widen=widen, constraint=constraint)
        ins = [i if (i is None or i == "" or isinstance(i, Keep)) else self.cast(i, ct, dtype)
               for i in inputs]
        out = self.node(onnx_op, ins, dtype=result or ct, **attrs)
        if result is None and ct != dtype:
            out = self.cast(out, dtype, ct)
        return out

    # -- common shapes of nodes ----------------------------------------------------------------
    def transpose(self, value: str, perm: Sequence[int]) -> str:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):  # only the identity is skipped: a bad perm fails
            return value
        return self.node("Transpose", [value], perm=perm, dtype=self.types.get(value))

    def reshape(self, value: str, shape: Sequence[int]) -> str:
        return self.node("Reshape", [value, self.int64s(shape)], dtype=self.types.get(value))

    def unsqueeze(self, value: str, axes: Sequence[int]) -> str:
        return self.node("Unsqueeze", [value, self.int64s(axes)], dtype=self.types.get(value))

    def squeeze(self, value: str, axes: Sequence[int]) -> str:
        return self.node("Squeeze", [value, self.int64s(axes)], dtype=self.types.get(value))

    def reduce(self, onnx_op: str, value: str, axes: Sequence[int] | None, keepdims: bool,
               dtype: str, *, widen: str = "value") -> str:
        """A Reduce* node over `axes` (None: every axis; never empty, callers handle that)."""
        if axes is not None and not list(axes):
            raise ValueError("reduce() over no axes; the rule must handle empty axes itself")
        axes_in = Keep(self.int64s(axes)) if axes is not None else None
        return self.typed(onnx_op, [value, axes_in], dtype, widen=widen,
                          keepdims=int(bool(keepdims)))


def _dtype_name(dt: np.dtype) -> str:
    for name, np_dt in NUMPY_TYPES.items():
        if np_dt == dt:
            return name
    raise ConverterError(f"numpy dtype {dt} has no ONNX lowering type")
