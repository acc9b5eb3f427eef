"""The emitter that export rules write TFLite through.

A rule gets an ExportContext and one WebNN Operation, emits TFLite operators with
`ctx.emit(...)` and returns the tensor indices holding the operation's results. The context
keeps the model being built (tensors, buffers, operator codes, operators), hands out tensor
names derived from the WebNN node (so a TFLite tensor can be traced back to its operation), and
turns numbers and arrays into constant tensors.

Two conventions every rule relies on:
  * `ctx.value(operand)` gives an operand in its compute type: TFLite's kernels compute in
    float32, so a float16 operand is read through a CAST (a float16 constant through
    DEQUANTIZE, TFLite's form of float16 weights). A rule may then return a float32 result
    for a float16 operation: the driver casts it back, so each operation still rounds its
    result to float16 as WebNN does.
  * Work on constants happens now, not at run time: `transpose` and `reshape` of a constant
    tensor give a new constant (a filter in another layout is transposed here, never by a
    TRANSPOSE operator in the model), and arithmetic on float32 constants is folded.
  * An operand may be held permuted (see layout.py): `ctx.get`/`ctx.value` give it as it is
    (a TRANSPOSE back is made once, when first asked for), `ctx.value_as(operand, perm)` gives
    it permuted without one when it is held that way.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import NamedTuple, Sequence

import numpy as np

from ...errors import ConverterError
from ...ir import Graph, Operand, Operation, TensorDesc
from ...ops.registry import broadcast_shapes
from .flatbuffer import ArrayBuffer
from .schema import NUMPY, TENSOR_TYPES, builtin_code, fb, options, options_type

__all__ = ["ExportContext", "Permuted", "compute_type"]

# Constants with at most this many elements are shared between the rules that make them.
_SHARED_CONSTANT_SIZE = 64
# float16 constants with more elements than this stay float16 in the file (and DEQUANTIZE
# reads them as float32), as the TFLite converter stores float16 weights; smaller ones are
# widened here.
_F16_WEIGHTS_SIZE = 16


class Permuted(NamedTuple):
    """An operand's values held with its axes permuted: tensor = transpose(operand, perm).
    A rule may return one for a result (an nchw convolution returns its nhwc result so)."""

    tensor: int
    perm: tuple[int, ...]


def compute_type(data_type: str) -> str:
    """The type TFLite computes an operand of `data_type` in."""
    return "float32" if data_type == "float16" else data_type


class ExportContext:
    """The model being built for one graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.tensors: list[fb.TensorT] = []
        self.descs: list[TensorDesc] = []
        self.buffers: list[ArrayBuffer] = [ArrayBuffer()]  # buffer 0: "no data", by convention
        self.operators: list[fb.OperatorT] = []
        self.codes: list[tuple[int, int]] = []  # (builtin code, version), by opcode index
        self.op: Operation | None = None  # the operation being exported
        self._values: dict[int, int] = {}  # id(operand) -> tensor
        self._reads: dict[tuple, int] = {}  # (id(operand), type ...) -> tensor
        self._casts: dict[tuple[int, str], int] = {}  # (tensor, type) -> the cast tensor
        self._permuted: dict[int, Permuted] = {}  # id(operand) -> its values, permuted
        self._override: dict[int, int] = {}  # id(operand) -> tensor, while a rule runs permuted
        self._shared: dict[tuple, int] = {}  # small constants by value
        self._constants: dict[int, np.ndarray] = {}  # tensor -> its value
        self._producers: dict[int, tuple[str, list[int], object]] = {}  # tensor -> its op
        self._names: set[str] = set()
        self.named: set[int] = set()  # tensors that carry a WebNN operand's name

    # -- names and tensors ---------------------------------------------------------------------
    def where(self) -> str:
        return f"{self.op.op_type} '{self.op.name}'" if self.op is not None else "tflite export"

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name

    def rename(self, tensor: int, name: str) -> None:
        self._names.discard(self.tensors[tensor].name)
        self.tensors[tensor].name = self.fresh(name)

    def tensor(self, data_type: str, shape: Sequence[int], name: str | None = None) -> int:
        """A new tensor without data (an input or an operator's result)."""
        if data_type not in TENSOR_TYPES:
            raise ConverterError(f"TFLite tensors cannot hold {data_type}", where=self.where())
        t = fb.TensorT()
        t.shape = [int(d) for d in shape]
        t.type = TENSOR_TYPES[data_type]
        t.buffer = 0
        t.name = self.fresh(name or self._base("t"))
        self.tensors.append(t)
        self.descs.append(TensorDesc(data_type, tuple(t.shape)))
        return len(self.tensors) - 1

    def desc(self, tensor: int) -> TensorDesc:
        return self.descs[tensor]

    def _base(self, what: str) -> str:
        return f"{self.op.name}/{what}" if self.op is not None else what

    # -- constants -----------------------------------------------------------------------------
    def const(self, value, data_type: str | None = None, name: str | None = None) -> int:
        """A constant tensor holding `value` (an ndarray is held as it is, not copied)."""
        arr = np.asarray(value, dtype=NUMPY[data_type] if data_type else None)
        if data_type is None:
            data_type = _type_name(arr.dtype)
        elif arr.dtype != NUMPY[data_type]:
            arr = arr.astype(NUMPY[data_type])
        key = None
        if arr.size <= _SHARED_CONSTANT_SIZE and name is None:
            key = (data_type, arr.shape, arr.tobytes())
            if key in self._shared:
                return self._shared[key]
        t = self.tensor(data_type, arr.shape, name or self._base("const"))
        self.tensors[t].buffer = len(self.buffers)
        self.buffers.append(ArrayBuffer(arr))
        self._constants[t] = arr
        if key is not None:
            self._shared[key] = t
        return t

    def scalar(self, value, data_type: str) -> int:
        return self.const(np.array(value, dtype=NUMPY[data_type]), data_type)

    def int32s(self, values: Sequence[int]) -> int:
        """A 1-D int32 constant (shapes, axes, permutations, paddings ...)."""
        return self.const(np.array([int(v) for v in values], dtype=np.int32), "int32")

    def constant_value(self, tensor: int) -> np.ndarray | None:
        """The value of a constant tensor; None for a computed one."""
        return self._constants.get(tensor)

    # -- operators -----------------------------------------------------------------------------
    def emit(self, code: str, inputs: Sequence[int | None], out: TensorDesc | tuple | list,
             opts=None) -> int | list[int]:
        """Emit one operator; `out` is the result's (data_type, shape), or a list of them.

        Returns the result tensor, or the list of them when `out` is a list. None inputs are
        absent optional inputs (-1 in the file).
        """
        many = isinstance(out, list)
        results = [self.tensor(dt, shape, self._base(code.lower())) for dt, shape in
                   (out if many else [out])]
        op = fb.OperatorT()
        key = (builtin_code(code), _VERSIONS.get(code, 1))
        if key not in self.codes:
            self.codes.append(key)
        op.opcodeIndex = self.codes.index(key)
        op.inputs = [-1 if i is None else int(i) for i in inputs]
        op.outputs = results
        if opts is not None:
            op.builtinOptionsType = options_type(opts)
            op.builtinOptions = opts
        self.operators.append(op)
        for r in results:
            self._producers[r] = (code, list(op.inputs), opts)
        return results if many else results[0]

    def producer(self, tensor: int) -> tuple[str, list[int], object] | None:
        return self._producers.get(tensor)

    # -- operands ------------------------------------------------------------------------------
    def bind(self, operand: Operand, tensor: int) -> None:
        self._values[id(operand)] = tensor

    def bind_permuted(self, operand: Operand, tensor: int, perm: Sequence[int]) -> None:
        """Record that `tensor` holds `operand` with its axes permuted by `perm` (an nchw
        result kept in nhwc); the operand itself is made (one TRANSPOSE) only if read."""
        self._permuted[id(operand)] = Permuted(tensor, tuple(int(p) for p in perm))

    def permutation(self, operand: Operand) -> tuple[int, ...] | None:
        """The permutation an operand is held in, when it is held permuted."""
        held = self._permuted.get(id(operand))
        return held.perm if held is not None else None

    def held(self, operand: Operand) -> Permuted | None:
        return self._permuted.get(id(operand))

    @contextmanager
    def reading(self, tensors: dict[int, int]):
        """While a rule runs: read the operand with id k as tensor tensors[k] (layout.py runs
        pointwise rules on permuted tensors so)."""
        self._override = dict(tensors)
        try:
            yield
        finally:
            self._override = {}

    def value_as(self, operand: Operand, perm: Sequence[int]) -> int:
        """`operand` in its compute type with its axes permuted by `perm`: no operator when
        it is held that way, the permutation made now when it is a constant."""
        perm = tuple(int(p) for p in perm)
        held = self._permuted.get(id(operand))
        if held is not None and held.perm == perm and id(operand) not in self._override:
            return self.cast(held.tensor, compute_type(operand.data_type))
        if operand.is_constant and id(operand) not in self._override:
            return self.permuted(operand, perm)
        return self.transpose(self.value(operand), perm)

    def get_as(self, operand: Operand, perm: Sequence[int]) -> int:
        """`operand` in its own data type with its axes permuted by `perm` (see value_as)."""
        perm = tuple(int(p) for p in perm)
        held = self._permuted.get(id(operand))
        if held is not None and held.perm == perm and id(operand) not in self._override:
            return held.tensor
        if operand.is_constant and id(operand) not in self._override:
            return self.const(self.array(operand).transpose(perm), operand.data_type)
        return self.transpose(self.get(operand), perm)

    def get(self, operand: Operand) -> int:
        """The tensor holding `operand` in its own data type."""
        t = self._override.get(id(operand))
        if t is not None:
            return t
        t = self._values.get(id(operand))
        if t is not None:
            return t
        held = self._permuted.get(id(operand))
        if held is not None:
            inverse = [held.perm.index(i) for i in range(len(held.perm))]
            t = self.transpose(held.tensor, inverse)
            self.bind(operand, t)
            return t
        if operand.is_constant:
            t = self._constant_operand(operand)
            self.bind(operand, t)
            return t
        raise ConverterError(f"operand '{operand.name}' is read before it is exported",
                             where=self.where())

    def array(self, operand: Operand | None) -> np.ndarray | None:
        """A constant operand's value (no copy); None for anything computed."""
        if operand is None or not operand.is_constant:
            return None
        return operand.constant.numpy()

    def _constant_operand(self, operand: Operand) -> int:
        data = operand.constant
        if data.data_type in ("int4", "uint4"):
            raise ConverterError(f"4-bit constant '{operand.name}' can only feed "
                                 "dequantizeLinear in a TFLite export", where=self.where())
        if data.fill is not None and operand.size > _SHARED_CONSTANT_SIZE:
            # A filled constant costs one number: broadcast at run time.
            one = self.scalar(data.fill, data.data_type)
            return self.emit("BROADCAST_TO", [one, self.int32s(operand.shape)], operand.desc)
        saved = self.op
        self.op = None
        try:
            return self.const(data.numpy(), data.data_type, name=operand.name)
        finally:
            self.op = saved

    def value(self, operand: Operand) -> int:
        """`operand` in its compute type (float16 is read as float32)."""
        return self.read(operand, compute_type(operand.data_type))

    def read(self, operand: Operand, data_type: str) -> int:
        """`operand` as `data_type`, converted once and shared by every reader."""
        if operand.data_type == data_type:
            return self.get(operand)
        if id(operand) in self._override:
            return self.cast(self._override[id(operand)], data_type)
        key = (id(operand), data_type)
        if key in self._reads:
            return self._reads[key]
        saved = self.op
        self.op = None
        try:
            arr = self.array(operand)
            if arr is not None and operand.constant.fill is None and (
                    operand.data_type != "float16" or operand.size <= _F16_WEIGHTS_SIZE):
                t = self.const(arr.astype(NUMPY[data_type]), data_type,
                               name=f"{operand.name}/{data_type}")
            elif arr is not None and operand.data_type == "float16" and data_type == "float32":
                t = self.emit("DEQUANTIZE", [self.get(operand)], (data_type, operand.shape))
            else:
                t = self.cast(self.get(operand), data_type)
        finally:
            self.op = saved
        self._reads[key] = t
        return t

    def permuted(self, operand: Operand, perm: Sequence[int]) -> int:
        """`operand` in its compute type with its axes permuted. A constant is permuted now,
        before anything else reads it (a float16 filter stays float16 in the file, permuted,
        under its DEQUANTIZE); a computed operand gets a TRANSPOSE."""
        perm = [int(p) for p in perm]
        arr = self.array(operand)
        if arr is None and perm != list(range(len(perm))) and id(operand) not in self._override:
            key = (id(operand), "permuted", tuple(perm))
            if key not in self._reads:  # a stored weight (--weights) is permuted now
                from .quantization import stored_weight_permuted  # a rule module: imported late

                saved, self.op = self.op, None
                try:
                    self._reads[key] = stored_weight_permuted(self, operand, perm)
                finally:
                    self.op = saved
            if self._reads[key] is not None:
                return self._reads[key]
        if arr is None or perm == list(range(len(perm))) or id(operand) in self._override:
            return self.transpose(self.value(operand), perm)
        key = (id(operand), "permuted", tuple(perm))
        data = operand.constant
        if key not in self._reads and data.fill is not None \
                and operand.size > _SHARED_CONSTANT_SIZE:
            # A fill permuted is the same fill: one number, broadcast at run time.
            one = self.scalar(data.fill, compute_type(operand.data_type))
            shape = [operand.shape[p] for p in perm]
            self._reads[key] = self.emit("BROADCAST_TO", [one, self.int32s(shape)],
                                         (compute_type(operand.data_type), tuple(shape)))
        if key not in self._reads:
            saved = self.op
            self.op = None
            try:
                moved = arr.transpose(perm)  # a view: laid out when the file is written
                ct = compute_type(operand.data_type)
                if operand.data_type == "float16" and operand.size > _F16_WEIGHTS_SIZE:
                    half = self.const(moved, "float16", name=f"{operand.name}/permuted")
                    t = self.emit("DEQUANTIZE", [half], (ct, moved.shape))
                else:
                    t = self.const(moved, ct, name=f"{operand.name}/permuted")  # cast if need be
            finally:
                self.op = saved
            self._reads[key] = t
        return self._reads[key]

    # -- common operators ----------------------------------------------------------------------
    def cast(self, tensor: int, to: str) -> int:
        """`tensor` as data type `to` (made once per tensor and type)."""
        d = self.desc(tensor)
        if d.data_type == to:
            return tensor
        if (tensor, to) in self._casts:
            return self._casts[(tensor, to)]
        value = self.constant_value(tensor)
        if value is not None:
            t = self.const(value.astype(NUMPY[to]), to)
        else:
            t = self.emit("CAST", [tensor], (to, d.shape),
                          options("CastOptions", inDataType=TENSOR_TYPES[d.data_type],
                                  outDataType=TENSOR_TYPES[to]))
        self._casts[(tensor, to)] = t
        return t

    def transpose(self, tensor: int, perm: Sequence[int]) -> int:
        """`tensor` with its axes permuted; a constant is permuted now, and a TRANSPOSE of a
        TRANSPOSE that undoes it is no operator at all."""
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return tensor
        d = self.desc(tensor)
        value = self.constant_value(tensor)
        if value is not None:
            return self.const(value.transpose(perm), d.data_type)
        made = self.producer(tensor)
        if made is not None and made[0] == "TRANSPOSE":
            source, first = made[1][0], self.constant_value(made[1][1])
            if [int(first[p]) for p in perm] == list(range(len(perm))):
                return source
        shape = [d.shape[p] for p in perm]
        return self.emit("TRANSPOSE", [tensor, self.int32s(perm)], (d.data_type, shape))

    def reshape(self, tensor: int, shape: Sequence[int]) -> int:
        d = self.desc(tensor)
        shape = [int(s) for s in shape]
        if list(d.shape) == shape:
            return tensor
        value = self.constant_value(tensor)
        if value is not None:
            return self.const(value.reshape(shape), d.data_type)
        return self.emit("RESHAPE", [tensor, self.int32s(shape)], (d.data_type, shape),
                         options("ReshapeOptions", newShape=shape))

    def binary(self, code: str, a: int, b: int, data_type: str | None = None) -> int:
        """An element-wise binary operator with numpy broadcasting; the result has a's type
        unless `data_type` says otherwise (comparisons give bool)."""
        da, db = self.desc(a), self.desc(b)
        shape = broadcast_shapes(da.shape, db.shape)
        if shape is None:
            raise ConverterError(f"{code} of shapes {list(da.shape)} and {list(db.shape)} "
                                 "does not broadcast", where=self.where())
        folded = self._fold(code, a, b, data_type or da.data_type)
        if folded is not None:
            return folded
        opts = _BINARY_OPTIONS.get(code)
        return self.emit(code, [a, b], (data_type or da.data_type, shape),
                         options(opts) if opts else None)

    def _fold(self, code: str, a: int, b: int, data_type: str) -> int | None:
        """float32 arithmetic on two constants, done now. numpy's float32 operations round
        exactly as TFLite's kernels do (IEEE, one rounding each), so the value is the same."""
        va, vb = self.constant_value(a), self.constant_value(b)
        fold = _FOLDABLE.get(code)
        if va is None or vb is None or fold is None or data_type != "float32" \
                or va.dtype != np.float32 or vb.dtype != np.float32:
            return None
        with np.errstate(all="ignore"):
            return self.const(np.ascontiguousarray(fold(va, vb), np.float32), "float32")

    def unary(self, code: str, tensor: int, data_type: str | None = None, opts=None) -> int:
        d = self.desc(tensor)
        value = self.constant_value(tensor)
        if code == "SQRT" and value is not None and value.dtype == np.float32:
            with np.errstate(all="ignore"):  # correctly rounded, as the kernel's
                return self.const(np.sqrt(value), "float32")
        return self.emit(code, [tensor], (data_type or d.data_type, d.shape), opts)

    def add(self, a: int, b: int) -> int:
        return self.binary("ADD", a, b)

    def sub(self, a: int, b: int) -> int:
        return self.binary("SUB", a, b)

    def mul(self, a: int, b: int) -> int:
        return self.binary("MUL", a, b)

    def div(self, a: int, b: int) -> int:
        return self.binary("DIV", a, b)

    def maximum(self, a: int, b: int) -> int:
        return self.binary("MAXIMUM", a, b)

    def minimum(self, a: int, b: int) -> int:
        return self.binary("MINIMUM", a, b)

    def carried(self, tensor: int, kernel_types: Sequence[str]) -> int:
        """`tensor` as a type the kernel of a data-moving operator takes: unchanged when it
        takes the tensor's own type, else reinterpreted (BITCAST, no arithmetic) as the
        same-width integer type. Undo with `carried_back`."""
        d = self.desc(tensor)
        if d.data_type in kernel_types:
            return tensor
        carrier = _SAME_BITS.get(d.data_type)
        if carrier is None or carrier not in kernel_types:
            raise ConverterError(f"no TFLite kernel moves {d.data_type} values here",
                                 where=self.where())
        return self.bitcast(tensor, carrier)

    def carried_back(self, tensor: int, data_type: str) -> int:
        return self.bitcast(tensor, data_type)

    def bitcast(self, tensor: int, to: str) -> int:
        d = self.desc(tensor)
        if d.data_type == to:
            return tensor
        value = self.constant_value(tensor)
        if value is not None:
            return self.const(value.view(NUMPY[to]), to)
        return self.emit("BITCAST", [tensor], (to, d.shape))

    def number(self, value, like: int) -> int:
        """A scalar constant of the same type as tensor `like`."""
        return self.scalar(value, self.desc(like).data_type)

    def select(self, condition: int, yes: int, no: int) -> int:
        """SELECT_V2: `yes` where the bool `condition` holds, else `no` (all broadcast)."""
        shape = broadcast_shapes(self.desc(yes).shape, self.desc(no).shape)
        shape = broadcast_shapes(self.desc(condition).shape, shape)
        return self.emit("SELECT_V2", [condition, yes, no], (self.desc(yes).data_type, shape))


# Operator versions the runtime's resolver requires beyond 1 (LiteRT registers BROADCAST_TO
# from version 2 on); every other operator is written as version 1, which each kernel
# registers and which dispatches on the tensors' types as later versions do.
_VERSIONS = {"BROADCAST_TO": 2}

# The same-width integer type that carries a type's bits through a data-moving operator.
_SAME_BITS = {"uint32": "int32", "uint64": "int64", "float16": "int16", "int32": "uint32",
              "int64": "uint64"}

_FOLDABLE = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
             "MAXIMUM": np.maximum, "MINIMUM": np.minimum}

# Operators whose options table must be present (the runtime reads fields from it).
_BINARY_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions",
                   "DIV": "DivOptions"}


def _type_name(dt: np.dtype) -> str:
    for name, np_dt in NUMPY.items():
        if np_dt == dt.newbyteorder("<"):
            return name
    raise ConverterError(f"numpy dtype {dt} has no TFLite tensor type")
