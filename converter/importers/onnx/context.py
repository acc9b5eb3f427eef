"""The state of one ONNX import: what each ONNX value has become.

Every ONNX value name maps to a `Value`: a WebNN operand, or an array known at conversion time
(an initializer, a Constant, or anything computed only from those and from static shapes). Known
values stay numpy until an op that WebNN runs needs them; then they become graph constants,
without copying.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import onnx

from ...errors import ConverterError
from ... import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ...ir import ConstantData, Graph, Operand, TensorDesc
from ...ir.operand import unpack4
from ...budget import MemoryBudget
from .inference import PendingType
from .registry import Invalid, Unsupported
from .tensor_data import ONNX_TO_WEBNN, onnx_dtype_name

__all__ = ["Value", "OnnxNode", "ImportContext"]

_PACKED = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)


@dataclass
class Value:
    # The ONNX element type (keeps BOOL apart from UINT8), or a PendingType until ONNX's type
    # inference, running meanwhile in a child process, has answered (read it as `onnx_type`).
    type_or_pending: int | PendingType
    operand: Operand | None = None
    known: np.ndarray | None = None  # storage form: BOOL as uint8, 4-bit packed
    known_shape: tuple[int, ...] | None = None  # the logical shape (packed arrays are flat)

    def __post_init__(self):
        if self.known is not None and self.known_shape is None:
            self.known_shape = tuple(self.known.shape)

    @property
    def onnx_type(self) -> int:
        if isinstance(self.type_or_pending, PendingType):
            self.type_or_pending = self.type_or_pending.resolve()
        return self.type_or_pending


class OnnxNode:
    """A NodeProto with its attributes decoded and its opset version."""

    def __init__(self, proto: onnx.NodeProto, opset: int, index: int):
        self.proto = proto
        self.op_type = proto.op_type
        self.domain = proto.domain
        self.name = proto.name or f"{proto.op_type}_{index}"
        self.opset = opset
        self.inputs = [n or None for n in proto.input]
        self.outputs = [n or None for n in proto.output]
        self._attrs = {a.name: a for a in proto.attribute}

    def input(self, i: int) -> str | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute's value, or `default` when the node does not set it. A value that is
        not of the kind its default is (an int where an int is expected ...), or holds nothing
        of its declared type, is Invalid: a damaged model must not reach a rule's arithmetic.
        (Ops of the onnx package's domains have had each attribute's type checked against
        their schema before their rule runs, checks.check_attribute_types; for the others, a
        whole float stands for an int.)"""
        a = self._attrs.get(name)
        if a is None:
            return default
        try:
            value = onnx.helper.get_attribute_value(a)
            if isinstance(value, bytes):
                value = value.decode("utf-8")
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode("utf-8") for v in value]
        except (ValueError, UnicodeDecodeError):
            raise Invalid(f"attribute '{name}' cannot be read (type {_type_name(a.type)})") \
                from None
        if value is None:
            raise Invalid(f"attribute '{name}' holds no value of its type {_type_name(a.type)}")
        if isinstance(default, int) and isinstance(value, float) and value.is_integer():
            return int(value)  # a whole number written as a float means the same
        if default is not None and not _same_kind(value, default):
            raise Invalid(f"attribute '{name}' holds a {type(value).__name__}, not the "
                          f"{type(default).__name__} it takes")
        return value

    def __str__(self) -> str:
        return f"{self.op_type} '{self.name}'"


def _type_name(code: int) -> str:
    try:
        return onnx.AttributeProto.AttributeType.Name(code)
    except ValueError:
        return str(code)


def _same_kind(value: Any, default: Any) -> bool:
    """Whether an attribute's value can stand where `default` stands (ints for floats too)."""
    if isinstance(default, bool) or isinstance(default, int):
        return isinstance(value, int)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return True


class ImportContext:
    def __init__(self, graph: Graph, opsets: dict[str, int], *,
                 budget: MemoryBudget | None = None, where: str = "model",
                 isolate: bool = False):
        self.graph = graph
        self.opsets = opsets
        self.budget = budget or MemoryBudget()  # what folding and rules may allocate
        self.where = where  # the model file, for errors
        self.isolate = isolate  # run ONNX's C++ shape inference in a child (inference.py)
        self.values: dict[str, Value] = {}
        self.node: OnnxNode | None = None  # the node being imported, for names and errors
        self.producers: dict[str, onnx.NodeProto] = {}  # ONNX value -> the node that makes it
        self.graph_inputs: set[str] = set()
        # Body nodes imported by unrolling Loops and Scans, counted for the whole model: loops
        # nested in loops multiply, so they share one budget (unroll_budget.MAX_UNROLLED_NODES).
        self.unrolled = 0
        self.unrolling = 0  # the Loops and Scans being unrolled around the current node
        # A body's ONNX types, by the body and the types of what it reads: every copy of an
        # unrolled body reads the same, so inference runs once per loop (control_flow.py).
        self.body_types: dict[tuple, tuple[onnx.GraphProto, dict[str, int]]] = {}

    # -- looking values up --------------------------------------------------------------------
    def value(self, name: str | None) -> Value:
        if not name:
            raise Invalid("a required input is missing: the node gives it an empty name")
        try:
            return self.values[name]
        except KeyError:
            raise Unsupported(f"input '{name}' is not produced by any node or initializer") from None

    def is_known(self, name: str | None) -> bool:
        return name is not None and self.value(name).known is not None

    def known(self, name: str | None) -> np.ndarray | None:
        """The value of `name` if known at conversion time, in ONNX's numpy form (bool as bool)."""
        if name is None:
            return None
        v = self.value(name)
        if v.known is None:
            return None
        if v.onnx_type == onnx.TensorProto.BOOL:
            return v.known.view(np.bool_)
        return v.known

    def require_known(self, name: str | None, what: str) -> np.ndarray:
        """A value the WebNN op takes as a plain number or list, so it must be known now."""
        value = self.known(name)
        if value is None:
            feeding = self.inputs_feeding(name)
            hint = (f"; give {', '.join(repr(f) for f in feeding)} a value at conversion time "
                    f"(--const NAME=VALUE)") if feeding else ""
            raise Unsupported(f"{what} must be known at conversion time, but it is computed "
                              f"from graph inputs{hint}", needs=feeding)
        return value

    def inputs_feeding(self, name: str) -> tuple[str, ...]:
        """The graph inputs a value is computed from (walking back through the ONNX nodes)."""
        found, seen, todo = [], set(), [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in self.graph_inputs:
                found.append(current)
            elif current in self.producers:
                todo.extend(i for i in self.producers[current].input if i)
        return tuple(sorted(found))

    def onnx_type(self, name: str) -> int:
        return self.value(name).onnx_type

    def desc(self, name: str) -> TensorDesc:
        v = self.value(name)
        if v.operand is not None:
            return v.operand.desc
        return TensorDesc(_webnn_type(name, v.onnx_type), v.known_shape)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.desc(name).shape

    def rank(self, name: str) -> int:
        return len(self.shape(name))

    def dtype(self, name: str) -> str:
        return self.desc(name).data_type

    # -- making operands ----------------------------------------------------------------------
    def operand(self, name: str) -> Operand:
        """The WebNN operand for `name`; a known value becomes a graph constant (not copied)."""
        v = self.value(name)
        if v.operand is None:
            v.operand = self.constant(v.known, _webnn_type(name, v.onnx_type), name=name,
                                      shape=v.known_shape)
        return v.operand

    def constant(self, array: np.ndarray, data_type: str | None = None, *,
                 name: str | None = None, shape: tuple[int, ...] | None = None) -> Operand:
        """A graph constant holding `array` as it is (4-bit types: packed bytes plus `shape`)."""
        array = np.asarray(array)
        if array.dtype == np.bool_:
            array = array.view(np.uint8)
        if data_type is None:
            from ... import dtypes

            data_type = dtypes.from_numpy(array.dtype)
        base = name or (f"{self.node.name}_const" if self.node else "const")
        if array.size == 0:
            what = f"'{name}'" if name else "a value"
            raise Unsupported(f"{what} has shape {list(shape or array.shape)}, with a 0 "
                              f"dimension, and a WebNN op needs it; WebNN has no empty "
                              f"tensors (empty values only pass through ops computed at "
                              f"conversion time, and Concat drops them)")
        cname = self.graph.fresh_name(_clean(base))
        if array.strides and 0 in array.strides and array.size > 1 and _is_fill(array):
            data = ConstantData(data_type, array.shape, fill=array.reshape(-1)[0].item())
        else:
            data = ConstantData(data_type, shape or array.shape, array=array)
        try:
            return self.graph.add_constant(cname, data)
        except ConverterError as e:  # a shape past the spec's or the converter's limits
            raise Unsupported(f"a value it computes cannot be a WebNN constant: {e.what}") \
                from None

    def emit(self, op_type: str, inputs: Sequence[Operand | None], attrs: dict | None = None,
             *, suffix: str | None = None) -> Operand | list[Operand]:
        """Add one WebNN operation for the current node; return its result(s).

        A WebNN validation error here means the node uses something WebNN cannot express (or a
        rule is wrong): it is reported against the ONNX node as unsupported, with the reason.
        """
        base = self.node.name if self.node else op_type
        name = self.graph.fresh_name(_clean(f"{base}/{suffix or op_type}"))
        try:
            op = self.graph.add_operation(op_type, list(inputs), attrs or {}, name=name)
        except ConverterError as e:
            raise Unsupported(f"WebNN rejects it: {e.line()}") from None
        return op.outputs[0] if len(op.outputs) == 1 and "output" in op.opdef.limits \
            else list(op.outputs)

    def scalar(self, value, data_type: str) -> Operand:
        """A rank-0 constant of `data_type`."""
        from ... import dtypes

        return self.constant(np.array(value, dtype=dtypes.numpy_dtype(data_type)), data_type)

    def set(self, name: str | None, result: Operand | np.ndarray, onnx_type: int | PendingType,
            known_shape: tuple[int, ...] | None = None) -> None:
        if name is None:
            return
        if isinstance(result, Operand):
            self.values[name] = Value(onnx_type, operand=result)
        else:
            arr = np.asarray(result)
            if arr.dtype == np.bool_:
                arr = arr.view(np.uint8)
            self.values[name] = Value(onnx_type, known=arr, known_shape=known_shape)


def unpack_known(v: Value) -> np.ndarray:
    if v.onnx_type in _PACKED:
        return unpack4(v.known, v.known_shape, signed=v.onnx_type == onnx.TensorProto.INT4)
    return v.known


def _webnn_type(name: str, onnx_type: int) -> str:
    if onnx_type not in ONNX_TO_WEBNN:
        raise Unsupported(f"'{name}' has data type {onnx_dtype_name(onnx_type)}, which WebNN "
                          f"does not have")
    return ONNX_TO_WEBNN[onnx_type][0]


def _is_fill(array: np.ndarray) -> bool:
    flat = array.reshape(-1)
    return bool(np.all(flat == flat[0]))


def _clean(name: str) -> str:
    return name.strip() or "t"
