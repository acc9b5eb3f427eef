"""The state of one TFLite import: what each tensor of the subgraph has become.

Every tensor index maps to a `Value`: a WebNN operand, or an array known at conversion time (a
constant buffer, or a value computed from constants and static shapes only). Known values stay
numpy until an op that WebNN runs needs them; then they become graph constants, not copied.

Quantized tensors (int8/uint8/int32 with scale and zero point) keep their stored type in the
graph. Rules compute on real values: `real(k)` gives an input as dequantizeLinear(q, scale,
zeroPoint), and a real result is quantizeLinear-ed back to its output tensor's type, as the
TFLite kernel does. (Where a real value falls exactly halfway between two steps, quantizeLinear
rounds to even and LiteRT's kernels round up or away from zero: one step apart.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ... import dtypes
from ...budget import MemoryBudget, shape_bytes
from ...errors import ConverterError
from ... import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ...ir import ConstantData, Graph, Operand, TensorDesc
from ...ir.operand import unpack4
from .model_file import Operator, Quantization, Subgraph, Tensor
from .registry import Unsupported

__all__ = ["Value", "Complex", "ImportContext", "ACT_NONE", "ACT_RELU", "ACT_RELU_N1_TO_1",
           "ACT_RELU6", "ACT_TANH", "ACT_SIGN_BIT"]

# ActivationFunctionType
ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6, ACT_TANH, ACT_SIGN_BIT = range(6)
_ACT_NAMES = {ACT_RELU: "RELU", ACT_RELU_N1_TO_1: "RELU_N1_TO_1", ACT_RELU6: "RELU6",
              ACT_TANH: "TANH", ACT_SIGN_BIT: "SIGN_BIT"}
_QUANTIZED_STORAGE = ("int8", "uint8", "int32", "int64")


@dataclass(frozen=True)
class Complex:
    """A COMPLEX64 tensor as the import carries it (WebNN has no complex type): its real and
    imaginary parts, two float32 operands of the tensor's shape. Rules for complex ops read
    it with `ctx.complex(k)` and return one for a complex output; any other reader is refused,
    and so is a complex graph output."""

    real: Operand
    imag: Operand


@dataclass
class Value:
    tensor: Tensor
    operand: Operand | None = None  # as stored: int8 for an int8 quantized tensor
    known: np.ndarray | None = None  # stored form (BOOL as uint8), with the logical shape
    real: Operand | None = None  # the dequantized form, made once when a rule asks for it
    parts: Complex | None = None  # a complex tensor's parts (then operand and known are None)


class ImportContext:
    def __init__(self, graph: Graph, subgraph: Subgraph, where: str):
        self.graph = graph
        self.subgraph = subgraph
        self.where = where
        self.values: dict[int, Value] = {}
        self.op: Operator | None = None  # the operator being imported, for names and errors
        self.model = None  # the TfliteModel, for rules that reach other subgraphs (CALL_ONCE)
        self.variables = None  # resource variables met so far (rules/variables.py)
        self.budget = MemoryBudget()  # what rules compute at conversion time (converter.budget)

    # -- the current operator's tensors --------------------------------------------------------
    def tensor(self, k: int) -> Tensor | None:
        """The tensor at input slot k, or None for an omitted optional input (-1 or absent)."""
        if k >= len(self.op.inputs) or self.op.inputs[k] < 0:
            return None
        return self.subgraph.tensors[self.op.inputs[k]]

    def has(self, k: int) -> bool:
        return self.tensor(k) is not None

    def out_tensor(self, k: int = 0) -> Tensor:
        """The tensor at output slot k, which the op writes: a malformed model may list fewer
        outputs, or omit this one (-1), and then the op is refused here."""
        outputs = self.op.outputs
        if k >= len(outputs) or outputs[k] < 0:
            listed = "omits it (-1)" if k < len(outputs) else f"lists {len(outputs)} outputs"
            raise Unsupported(f"{self.op.name} writes output {k}, and the operator {listed}")
        return self.subgraph.tensors[outputs[k]]

    def value(self, k: int) -> Value:
        t = self.tensor(k)
        if t is None:
            raise Unsupported(f"input {k} is required but omitted")
        v = self.values.get(t.index)
        if v is None:
            raise Unsupported(f"{t} is read before any operator writes it")
        if v.parts is not None:
            raise Unsupported(f"it reads {t}, which is complex64: WebNN has no complex type, "
                              f"and {self.op.name} is imported for real tensors only")
        if v.operand is None and v.known is None and self.op.name != "DENSIFY":
            raise Unsupported(f"{t} is sparse; only DENSIFY can read it")
        return v

    def is_complex(self, k: int) -> bool:
        t = self.tensor(k)
        return t is not None and t.type_name == "COMPLEX64"

    def complex(self, k: int) -> Complex:
        """Input k, a COMPLEX64 tensor, as its two float32 parts (a stored constant too)."""
        t = self.tensor(k)
        if t is None or not self.is_complex(k):
            raise Unsupported(f"input {k} must be complex64, not "
                              f"{t.type_name if t is not None else 'omitted'}")
        v = self.values.get(t.index)
        if v is None and t.data is not None and t.sparsity is None:
            count = int(np.prod(t.shape, dtype=np.int64))
            if t.data.size != 8 * count:
                raise Unsupported(f"{t} has {t.data.size} bytes; its shape {list(t.shape)} "
                                  f"of complex64 needs {8 * count}")
            stored = t.data.view("<c8").reshape(t.shape)
            v = Value(t, parts=Complex(
                self.constant(np.ascontiguousarray(stored.real), "float32", name=f"{t.name}/re"),
                self.constant(np.ascontiguousarray(stored.imag), "float32", name=f"{t.name}/im")))
            self.values[t.index] = v
        if v is None or v.parts is None:
            raise Unsupported(f"{t} is read before any operator writes it")
        return v.parts

    def known(self, k: int) -> np.ndarray | None:
        """Input k's value if known at conversion time (stored form, BOOL as uint8)."""
        if not self.has(k):
            return None
        return self.value(k).known

    def require_known(self, k: int, what: str) -> np.ndarray:
        """An input WebNN takes as a plain number or list, which must be known now."""
        value = self.known(k)
        if value is None:
            raise Unsupported(f"its {what} ({self.tensor(k)}) must be known at conversion time, "
                              f"but it is computed from graph inputs")
        return value

    def all_known(self) -> bool:
        return all(self.known(k) is not None for k in range(len(self.op.inputs)) if self.has(k))

    def desc(self, k: int) -> TensorDesc:
        """Input k's stored data type and shape."""
        v = self.value(k)
        if v.operand is not None:
            return v.operand.desc
        return TensorDesc(self._webnn_type(v.tensor), tuple(v.known.shape))

    def shape(self, k: int) -> tuple[int, ...]:
        return self.desc(k).shape

    def rank(self, k: int) -> int:
        return len(self.shape(k))

    def quant(self, k: int) -> Quantization | None:
        """Input k's quantization when it holds integers standing for real values."""
        t = self.tensor(k)
        return t.quant if t is not None and _quantized(t, self._webnn_type(t, strict=False)) \
            else None

    def out_quant(self, k: int = 0) -> Quantization | None:
        t = self.out_tensor(k)
        return t.quant if _quantized(t, self._webnn_type(t, strict=False)) else None

    # -- operands ---------------------------------------------------------------------------
    def operand(self, k: int) -> Operand:
        """Input k as stored; a known value becomes a graph constant (not copied)."""
        v = self.value(k)
        if v.operand is None and v.known is not None and v.known.size == 0:
            raise Unsupported(f"it reads {v.tensor}, which is empty (shape "
                              f"{list(v.known.shape)}); WebNN has no empty tensors")
        if v.operand is None:
            v.operand = self.constant(v.known, self._webnn_type(v.tensor), name=v.tensor.name)
        return v.operand

    def real(self, k: int) -> Operand:
        """Input k's real values: dequantized when the tensor is quantized, else as stored."""
        q = self.quant(k)
        if q is None:
            return self.operand(k)
        v = self.value(k)
        if v.real is None:
            v.real = self.dequantize(self.operand(k), q, suffix=f"{v.tensor.name}/dequantize")
        return v.real

    def passthrough(self, k: int, out: int = 0) -> Operand:
        """Input k for an op that only moves values: as stored when it and output `out` are
        quantized to the same type, as LiteRT's kernels copy the stored values (the output's
        parameters, which converters keep equal to the input's, are not applied); real when
        only one of them is quantized."""
        q_in, q_out = self.quant(k), self.out_quant(out)
        if (q_in is None) == (q_out is None) and \
                (q_in is None or self.tensor(k).type == self.out_tensor(out).type):
            return self.operand(k)
        return self.real(k)

    def dequantize(self, stored: Operand, q: Quantization, *, suffix: str = "dequantize",
                   real_type: str = "float32") -> Operand:
        scale, zero = self.quant_params(q, stored.rank, stored.data_type, real_type)
        return self.emit("dequantizeLinear", [stored, scale, zero], suffix=suffix)

    def quantize(self, real: Operand, q: Quantization, data_type: str, *,
                 suffix: str = "quantize") -> Operand:
        scale, zero = self.quant_params(q, real.rank, data_type, real.data_type)
        return self.emit("quantizeLinear", [real, scale, zero], suffix=suffix)

    def quant_params(self, q: Quantization, rank: int, data_type: str,
                     real_type: str = "float32") -> tuple[Operand, Operand]:
        """scale and zeroPoint constants with the tensor's rank, as WebNN requires: all ones
        for a per-tensor scale, the channel count at the quantized axis for a per-channel one."""
        shape = [1] * rank
        if q.per_channel:
            if not 0 <= q.axis < rank:
                raise Unsupported(f"its per-channel quantization axis {q.axis} is outside "
                                  f"rank {rank}")
            shape[q.axis] = q.scale.size
        elif q.scale.size != 1:
            raise Unsupported("its quantization has no scale")
        np_real = dtypes.numpy_dtype(real_type)
        scale = self.constant(q.scale.astype(np_real).reshape(shape), real_type,
                              name=f"{self._base()}/scale")
        zero = self.constant(q.zero_point.astype(dtypes.numpy_dtype(data_type)).reshape(shape),
                             data_type, name=f"{self._base()}/zero_point")
        return scale, zero

    def claim(self, shape: Sequence[int], itemsize: float, what: str | None = None) -> None:
        """Count a value of `shape` the current op (or `what`) is about to compute against the
        conversion's memory budget, before it is allocated: a tiny file can ask for a range,
        a tile or a table of billions of elements."""
        if what is None:
            what = "an op" if self.op is None else f"{self.op.name} (op {self.op.index})"
        self.budget.claim(shape_bytes(shape, itemsize), f"computing {what} at conversion time",
                          where=self.where)

    def constant(self, array: np.ndarray, data_type: str | None = None, *,
                 name: str | None = None) -> Operand:
        """A graph constant holding `array` as it is (int4: unpacked values, packed here)."""
        array = np.asarray(array)
        if array.dtype == np.bool_:
            array = array.view(np.uint8)
        if data_type is None:
            data_type = dtypes.from_numpy(array.dtype)
        if array.size == 0:
            raise Unsupported(f"a value of shape {list(array.shape)} has a 0 dimension; WebNN "
                              f"has no empty tensors")
        cname = self.graph.fresh_name(name or f"{self._base()}/const")
        if array.size > 1 and 0 in array.strides and _is_fill(array):
            # (its first element by index: reshaping a broadcast view would copy all of it)
            data = ConstantData(data_type, array.shape, fill=array[(0,) * array.ndim].item())
        elif 0 in array.strides:  # a broadcast view: its elements are written out from here
            self.claim(array.shape, dtypes.numpy_dtype(data_type).itemsize,
                       f"the value '{name}'" if name else None)
            data = ConstantData(data_type, array.shape,
                                array=array.astype(dtypes.numpy_dtype(data_type), copy=False))
        elif dtypes.info(data_type).bits == 4:
            from ...ir.operand import pack4

            data = ConstantData(data_type, array.shape, array=pack4(array))
        else:
            data = ConstantData(data_type, array.shape,
                                array=array.astype(dtypes.numpy_dtype(data_type), copy=False))
        try:
            return self.graph.add_constant(cname, data)
        except ConverterError as e:  # a shape past the spec's or the converter's limits
            raise Unsupported(f"a value it computes cannot be a WebNN constant: {e.what}") \
                from None

    def scalar(self, value, data_type: str) -> Operand:
        """A rank-0 constant of `data_type`."""
        return self.constant(np.array(value, dtype=dtypes.numpy_dtype(data_type)), data_type)

    def emit(self, op_type: str, inputs: Sequence[Operand | None], attrs: dict | None = None,
             *, suffix: str | None = None) -> Operand | list[Operand]:
        """Add one WebNN operation for the current TFLite op; return its result(s).

        A WebNN validation error here means the op uses something WebNN cannot express (or a
        rule is wrong): it is reported against the TFLite op as unsupported, with the reason.
        """
        name = self.graph.fresh_name(f"{self._base()}/{suffix or op_type}")
        try:
            op = self.graph.add_operation(op_type, list(inputs), attrs or {}, name=name)
        except ConverterError as e:
            raise Unsupported(f"WebNN rejects it: {e.line()}") from None
        return op.outputs[0] if len(op.outputs) == 1 and "output" in op.opdef.limits \
            else list(op.outputs)

    def activation(self, x: Operand, code: int, *, kernel_applies_all: bool = False) -> Operand:
        """A fused activation as its own WebNN op (WebNN removed fused activations).

        LiteRT's kernels apply TANH and SIGN_BIT only in the recurrent ops (RNN, LSTM), which
        pass `kernel_applies_all`; everywhere else they clamp for the RELU family and ignore
        the rest, so a model asking for TANH there has no single meaning and is refused.
        """
        if code == ACT_NONE:
            return x
        if code == ACT_RELU:
            return self.emit("relu", [x], suffix="relu")
        if code == ACT_RELU6:
            return self.emit("clamp", [x], {"minValue": 0, "maxValue": 6}, suffix="relu6")
        if code == ACT_RELU_N1_TO_1:
            return self.emit("clamp", [x], {"minValue": -1, "maxValue": 1},
                             suffix="relu_n1_to_1")
        if code in (ACT_TANH, ACT_SIGN_BIT) and kernel_applies_all:
            if code == ACT_TANH:
                return self.emit("tanh", [x], suffix="tanh")
            # signbit(x) as 1.0 / 0.0 (a -0.0 counts as positive here: WebNN compares values)
            negative = self.emit("lesser", [x, self.scalar(0, x.data_type)], suffix="sign_bit")
            return self.emit("cast", [negative], {"dataType": x.data_type},
                             suffix="sign_bit_value")
        name = _ACT_NAMES.get(code, f"activation {code}")
        raise Unsupported(f"fused activation {name}: LiteRT's kernel for {self.op.name} ignores "
                          f"it (it clamps only for RELU, RELU6 and RELU_N1_TO_1), so the "
                          f"model's meaning is ambiguous")

    # -- results ---------------------------------------------------------------------------
    def set_output(self, k: int, result) -> None:
        """Record output k: a real-valued result is quantized to a quantized output tensor's
        type; the operand takes the tensor's name when it is free."""
        t = self.out_tensor(k)
        if isinstance(result, Complex) or t.type_name == "COMPLEX64":
            if not (isinstance(result, Complex) and t.type_name == "COMPLEX64"):
                raise Unsupported(f"output {t} is {t.type_name}, the result "
                                  f"{'complex' if isinstance(result, Complex) else 'real'}")
            self.values[t.index] = Value(t, parts=result)
            return
        webnn_type = self._webnn_type(t)
        if isinstance(result, Operand):
            q = self.out_quant(k)
            if q is not None and result.data_type != webnn_type:
                if result.data_type not in dtypes.FLOAT_TYPES:
                    raise Unsupported(f"output {t} is {t.type_name} but the result is "
                                      f"{result.data_type}")
                # Readers get dequantize(quantize(result)), not the result itself: the rounding
                # to the tensor's grid is part of what the TFLite kernels compute.
                result = self.quantize(result, q, webnn_type, suffix=f"{t.name}/quantize")
                self.values[t.index] = Value(t, operand=result)
            elif result.data_type != webnn_type:
                raise Unsupported(f"output {t} is {t.type_name} but the result is "
                                  f"{result.data_type}")
            else:
                self.values[t.index] = Value(t, operand=result)
            self._adopt_name(result, t.name)
        else:
            arr = np.asarray(result)
            if arr.dtype == np.bool_:
                arr = arr.astype(np.uint8)
            want = dtypes.numpy_dtype(webnn_type)
            if arr.dtype != want:
                arr = arr.astype(want)
            self.values[t.index] = Value(t, known=arr)

    def _adopt_name(self, operand: Operand, name: str) -> None:
        """Name an op's result after its TFLite tensor, so the graph reads like its source."""
        if operand.kind == "intermediate" and operand.name != name \
                and operand.producer.name.startswith(self._base()) \
                and not self.graph.has_operand(name):
            self.graph.rename(operand, name)

    def _base(self) -> str:
        if self.op is None:
            return "const"
        label = self.op.custom_code if self.op.custom_code else self.op.name
        return f"{label}_{self.op.index}"

    def _webnn_type(self, t: Tensor, *, strict: bool = True) -> str | None:
        webnn = t.info.webnn
        if webnn is None and strict:
            raise Unsupported(f"{t} is {t.type_name}, which WebNN does not have")
        return webnn


def stored_array(t: Tensor) -> np.ndarray:
    """A dense tensor's buffer as an array of its stored type and shape (a view)."""
    info = t.info
    if t.type_name == "INT4":
        return unpack4(t.data, t.shape, signed=True)
    arr = t.data.view(info.numpy).reshape(t.shape)
    if t.is_bool:
        return (arr != 0).astype(np.uint8)
    return arr


def _quantized(t: Tensor, webnn_type: str | None) -> bool:
    return t.quant is not None and webnn_type in _QUANTIZED_STORAGE


def _is_fill(array: np.ndarray) -> bool:
    """Whether every element is the same. Only the stored elements are compared: along an axis
    of stride 0 (a broadcast) they repeat, and a broadcast of billions of elements from a
    tiny file must not be copied out to find that out."""
    stored = array[tuple(slice(0, 1) if s == 0 else slice(None) for s in array.strides)]
    flat = stored.reshape(-1)
    return bool(np.all(flat == flat[0]))
