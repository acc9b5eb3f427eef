"""The reference interpreter's core: the kernel table and the graph walk.

A kernel computes one WebNN op from the spec's definition in numpy. It is registered by
`@kernel("opName")` and called as `fn(op, inputs, env)`: `op` is the IR Operation (options via
`op.attr`), `inputs` its input values in slot order (None for absent optional operands), `env`
says which float type to compute in. It returns one ndarray, or a list for multi-output ops.

Values are held as: floats in `env.float` (float64 by default, whatever the graph's float type),
integers in the numpy type of their WebNN data type (int4/uint4 unpacked into int8/uint8). The
walk converts each result to that form, so a kernel may return int64 arithmetic and the
result wraps into the operand's type, as fixed-width hardware integers do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from ... import dtypes
from ...errors import ConverterError
from ...ir.feeds import check_feeds
from ...ir import Graph

__all__ = ["KERNELS", "kernel", "evaluate", "Env"]

Kernel = Callable[..., "np.ndarray | list[np.ndarray]"]
KERNELS: dict[str, Kernel] = {}


def kernel(*names: str):
    """Register the decorated function as the reference kernel of the named WebNN ops."""

    def register(fn: Kernel) -> Kernel:
        for name in names:
            if name in KERNELS:
                raise ValueError(f"reference kernel for {name} registered twice")
            KERNELS[name] = fn
        return fn

    return register


@dataclass(frozen=True)
class Env:
    """What a kernel needs besides its operands: the float type to compute in."""

    float: np.dtype

    def f(self, x) -> np.ndarray:
        """x as an array of the compute float type."""
        return np.asarray(x, dtype=self.float)

    def number(self, value, data_type: str):
        """A scalar option (alpha, minValue ...) cast to the operand's data type, as the spec
        casts MLNumber options, then held in the compute type."""
        from ...ops.activation import cast_number

        cast = cast_number(value, data_type)
        return self.float.type(cast) if is_float(data_type) else cast


def is_float(data_type: str) -> bool:
    return data_type in dtypes.FLOAT_TYPES


def storage(data_type: str, float_type: np.dtype) -> np.dtype:
    """The numpy type a value of `data_type` is held in during evaluation."""
    return float_type if is_float(data_type) else dtypes.numpy_dtype(data_type).newbyteorder("=")


def wide(x: np.ndarray) -> np.ndarray:
    """Integers widened to 64 bits for exact arithmetic (uint64 stays unsigned); floats as is."""
    if x.dtype.kind == "u":
        return x.astype(np.uint64) if x.dtype.itemsize == 8 else x.astype(np.int64)
    if x.dtype.kind == "i":
        return x.astype(np.int64)
    return x


def _held(value: np.ndarray, data_type: str, float_type: np.dtype, where: str) -> np.ndarray:
    """A kernel's result (or a fed/constant value) in the form the walk holds it in."""
    target = storage(data_type, float_type)
    value = np.asarray(value)
    if value.dtype.kind == "f" and target.kind != "f":
        raise AssertionError(f"{where}: a float result for an integer operand ({data_type}); "
                             f"the kernel must convert explicitly")
    if value.dtype == target:
        return value
    with np.errstate(over="ignore", invalid="ignore"):
        return value.astype(target)


def evaluate(graph: Graph, feeds, *, keep: Iterable[str] | str | None = None,
             dtype=np.float64) -> dict[str, np.ndarray]:
    """Run `graph` on `feeds` with the reference kernels, computing floats in `dtype`.

    Float inputs and constants are widened to `dtype` (float64 by default, also for float16
    graphs); integers stay exact. Returns the graph outputs by output name, plus the operands
    named in `keep` (or every operation result for keep="all") by operand name. Float results
    are in `dtype`, not rounded back to the graph's type; integer results have their WebNN
    type's numpy dtype. An op without a kernel raises NotImplementedError.
    """
    float_type = np.dtype(dtype)
    if float_type not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, not {float_type}")
    env = Env(float_type)
    missing = [op.op_type for op in graph.operations if op.op_type not in KERNELS]
    if missing:
        raise NotImplementedError(f"no reference kernel for WebNN op '{missing[0]}'")
    if keep == "all":
        wanted = {o.name for op in graph.operations for o in op.outputs}
    else:
        wanted = {keep} if isinstance(keep, str) else set(keep or ())  # one name, or several
        for name in wanted:
            graph.operand(name)  # raises a clear error for an unknown name
    # The same checks as the ONNX executor's: every input fed once, exact type and shape.
    feeds = check_feeds(graph, feeds)
    values: dict[str, np.ndarray] = {
        name: _held(feeds[name], operand.data_type, float_type, f"input '{name}'")
        for name, operand in graph.inputs.items()}

    # The last operation reading each operand, so that results are dropped once consumed
    # (a resnet50 graph would otherwise hold every activation at once).
    last_use: dict[str, int] = {}
    for i, op in enumerate(graph.operations):
        for o in op.inputs:
            if o is not None:
                last_use[o.name] = i
    held_to_end = wanted | {o.name for o in graph.outputs.values()}

    def value_of(operand) -> np.ndarray:
        if operand.name not in values:
            if operand.constant is None:
                raise ConverterError(f"operand '{operand.name}' is used before it is computed",
                                     where="reference")
            values[operand.name] = _held(operand.constant.numpy(), operand.data_type,
                                         float_type, f"constant '{operand.name}'")
        return values[operand.name]

    for i, op in enumerate(graph.operations):
        args = [value_of(o) if o is not None else None for o in op.inputs]
        with np.errstate(all="ignore"):  # inf and NaN are values here, as in the spec
            result = KERNELS[op.op_type](op, args, env)
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(results) != len(op.outputs):
            raise AssertionError(f"{op.op_type} '{op.name}': kernel gave {len(results)} "
                                 f"results for {len(op.outputs)} outputs")
        for out, r in zip(op.outputs, results):
            r = _held(r, out.data_type, float_type, f"{op.op_type} '{op.name}'")
            if tuple(r.shape) != out.shape:
                raise AssertionError(f"{op.op_type} '{op.name}': kernel gave shape "
                                     f"{list(r.shape)}, the graph says {list(out.shape)}")
            if out.name in last_use or out.name in held_to_end:  # unread results are dropped
                values[out.name] = r
        for o in op.inputs:
            if o is not None and last_use.get(o.name) == i and o.name not in held_to_end:
                values.pop(o.name, None)
    result = {name: value_of(operand) for name, operand in graph.outputs.items()}
    for name in wanted:
        result[name] = value_of(graph.operand(name))
    # A result may be a view of a read-only constant (identity, reshape): hand out arrays the
    # caller can write to.
    return {k: v if v.flags.writeable else v.copy() for k, v in result.items()}
