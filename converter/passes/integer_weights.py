"""The integer_weights pass: float32 weights stored as int8 or int4, read through dequantizeLinear.

`convert --weights int8|int4` (converter.convert(..., weights=...)) runs it, last. Each weight
constant of a conv2d, convTranspose2d, matmul or gemm becomes integers q, a float32 scale and a
zero point of 0, read through one dequantizeLinear whose result keeps the constant's name:

    w (float32[64, 3, 3, 3]) -> dequantizeLinear(w_int8 (int8[64, 3, 3, 3]),
                                                 w_scale (float32[64, 1, 1, 1]), 0) -> w

  * int8 (conv2d, convTranspose2d, matmul, gemm): one scale per output channel, symmetric:
    scale = max|w| / 127 over the channel, q = roundEven(w / scale) in [-127, 127]. The output
    channel is the filter's `o` axis for either convolution in every filter layout (for a
    grouped convTranspose2d, the output channel within its group), the last axis of matmul's
    b (the second to last of a), and gemm's N axis of b (M of a) as bTranspose (aTranspose)
    lay it out. The scale has the weight's rank, 1 on every other axis, as dequantizeLinear's
    blockwise broadcasting takes it (and TFLite's per-channel DEQUANTIZE).
  * int4 (matmul, gemm): one scale per block of `block_size` values along the reduction dim
    (matmul b's rows, gemm b's K axis ...) and per output channel: scale = max|w| / 7 over the
    block, q = roundEven(w / scale) in [-8, 7]. Convolution filters stay float32 (listed).
An all-zero channel or block gets scale 1 (dequantizeLinear wants positive scales): its q is 0.
The scale and the quotient are float32 arithmetic, so dequantizeLinear gives back q * scale
exactly as numpy computes it.

With a target, q is stored in the type its dequantizeLinear reads (quantized_weights.
encoding_for): int4 stays int4 where the target takes it (chromium-litert), else it is widened
exactly (uint4 with zero point 8, or int8: every int4 value fits), as imported int4 weights
are; int8 stays int8 on every built-in target. A target without a dequantizeLinear of float32
scale and result keeps every weight float32.

A float32 constant stays as it is, and the notes list it, when
  * no op reads it as a weight (biases, normalization scales, a gather's table ...), or an op
    also reads it otherwise, or two ops read it along different channel axes;
  * it is small (under float16_weights.MIN_BYTES), a fill, or holds values that are not
    finite;
  * an op reads it in a slot the target wants constant (a dequantizeLinear result is not);
  * int4: it is a convolution filter, its reduction dim is shorter than one block, or the
    default block size (32) does not divide that dim.
A reduction dim that a block size given (--block-size) does not divide is refused
(ConverterError naming the weight) before anything changes: the user asked for that size.

It runs after fold_constants (which would fold a small dequantizeLinear of constants back into
float32) and after the layout pass (a filter's final layout decides its channel axis).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..budget import MemoryBudget, format_size
from ..errors import ConverterError
from ..ir import ConstantData, Graph, Operand, Operation
from ..ir.operand import pack4
from . import PassContext, PassResult, graph_pass
from .float16_weights import MIN_BYTES, constant_slots
from .quantized_weights import encoding_for
from .rank_limits import type_allowed
from .weight_types import DEFAULT_BLOCK_SIZE, check_weights

__all__ = ["WEIGHT_OPS", "weight_axes", "integer_weights"]

# The ops whose weights each type quantizes.
WEIGHT_OPS = {"int8": ("conv2d", "convTranspose2d", "matmul", "gemm"),
              "int4": ("matmul", "gemm")}
# The largest |q| (symmetric: zero maps to zero) and the range q is clipped to.
_LEVELS = {"int8": (127, -127, 127), "int4": (7, -8, 7)}


def weight_axes(op: Operation, slot: str, rank: int) -> tuple[int, int] | None:
    """(output channel axis, reduction axis) of the weight `op` reads in `slot`, or None when
    the slot holds no weight."""
    if op.op_type in ("conv2d", "convTranspose2d") and slot == "filter":
        layout = op.attr("filterLayout")
        return layout.index("o"), layout.index("i")
    if op.op_type == "matmul" and slot in ("a", "b"):
        return (rank - 2, rank - 1) if slot == "a" else (rank - 1, rank - 2)
    if op.op_type == "gemm" and slot in ("a", "b"):
        flipped = bool(op.attr(f"{slot}Transpose"))
        return (1, 0) if (slot == "a") == flipped else (0, 1)
    return None


@dataclass(frozen=True)
class _Weight:
    operand: Operand
    output_axis: int
    reduction_axis: int


def _axes_of(operand: Operand, kinds: tuple[str, ...]) -> tuple[int, int] | str:
    """The weight's (output, reduction) axes when every use reads it as a weight of `kinds`
    along the same axes; else why not, as a note's reason."""
    found, other, filters = set(), False, False
    for use in operand.uses():
        op = use.op
        slot = None if op.opdef.variadic else op.opdef.slots[use.index]
        axes = weight_axes(op, slot, len(operand.shape)) if op.op_type in kinds else None
        filters |= op.op_type in ("conv2d", "convTranspose2d") and slot == "filter"
        if axes is None:
            other = True
        else:
            found.add(axes)
    if filters and "conv2d" not in kinds:
        return "convolution filters: int4 takes matmul and gemm weights"
    if not found:
        return f"not a weight of {', '.join(kinds)}"
    if other:
        return "also read as other than a weight"
    if len(found) != 1:
        return "read along different channel axes"
    return found.pop()


def _why_kept(operand: Operand, ctx: PassContext) -> tuple[str, str] | _Weight:
    """A weight to quantize, or why the float32 constant stays, as (reason, how to list it)."""
    data, name = operand.constant, operand.name
    if data.fill is not None:
        return "fills", name
    if data.nbytes < MIN_BYTES:
        return f"under {format_size(MIN_BYTES)}", name
    axes = _axes_of(operand, WEIGHT_OPS[ctx.weights])
    if isinstance(axes, str):
        return axes, name
    slots = constant_slots(operand, ctx)
    if slots:
        return f"read where {ctx.target.name} wants a constant", f"{name} ({', '.join(slots)})"
    block = ctx.block_size or DEFAULT_BLOCK_SIZE
    if ctx.weights == "int4" and operand.shape[axes[1]] < block:
        return f"fewer than {block} values per block", name
    if ctx.weights == "int4" and ctx.block_size is None and operand.shape[axes[1]] % block:
        return f"reduction dim not a multiple of {block}", name
    values = data.numpy()  # min and max allocate nothing; a NaN makes both NaN
    if not (np.isfinite(values.min()) and np.isfinite(values.max())):
        return "values not finite", name
    return _Weight(operand, *axes)


def _storage(ctx: PassContext) -> tuple[str, int] | str:
    """The type q is stored as on ctx.target, with the shift added to q and the zero point;
    or why the target takes none (every weight then stays float32)."""
    wanted, target = ctx.weights, ctx.target
    if target is None:
        return wanted, 0
    if not target.supports("dequantizeLinear"):
        return f"{target.name} has no dequantizeLinear"
    for key in ("scale", "output"):
        if not type_allowed(target, "dequantizeLinear", key, "float32"):
            return f"{target.name}'s dequantizeLinear takes no float32 {key}"
    encoding = encoding_for(target, wanted)
    if encoding is None:
        return f"{target.name}'s dequantizeLinear takes no {wanted}, nor a type that holds its values"
    return encoding


def quantize(values: np.ndarray, weights: str, output_axis: int, reduction_axis: int,
             block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(q as int8 values, float32 scale of the weight's rank) for `values` (float32)."""
    levels, low, high = _LEVELS[weights]
    shape = list(values.shape)
    if weights == "int8":  # one block spanning every axis but the output channel
        axes = tuple(a for a in range(len(shape)) if a != output_axis)
        scale_shape = [d if a == output_axis else 1 for a, d in enumerate(shape)]
        split = values
    else:
        r = reduction_axis
        split = values.reshape(shape[:r] + [shape[r] // block_size, block_size] + shape[r + 1:])
        axes = (r + 1,)
        scale_shape = shape[:r] + [shape[r] // block_size] + shape[r + 1:]
    # max |w| as the larger of max and -min: no |w| copy of the weights
    peak = np.maximum(split.max(axis=axes, keepdims=True), -split.min(axis=axes, keepdims=True))
    scale = peak / np.float32(levels)
    scale = np.where(scale > 0, scale, np.float32(1)).astype(np.float32)
    # peak / levels may round up: at float32's edge (a weight of +-3.4e38) levels * scale, what
    # dequantizeLinear computes for the peak, is then inf, and inf - inf a NaN the float model
    # never gave. One step down keeps it finite (the overshoot is under half a step times levels).
    with np.errstate(over="ignore"):
        over = ~np.isfinite(scale * np.float32(levels))
    scale[over] = np.nextafter(scale[over], np.float32(0))
    quotient = split / scale  # the one float32 copy: rounded and clipped in place
    np.rint(quotient, out=quotient)
    np.clip(quotient, low, high, out=quotient)
    return quotient.astype(np.int8).reshape(shape), scale.reshape(scale_shape)


def _stored(q: np.ndarray, data_type: str, shift: int) -> ConstantData:
    """q (int8 values) shifted by `shift` and held as `data_type` (4-bit types packed)."""
    values = q.astype(np.int16) + shift
    if data_type in ("int4", "uint4"):
        return ConstantData(data_type, q.shape, array=pack4(values))
    return ConstantData(data_type, q.shape, array=values.astype(np.dtype(data_type)))


def _refuse_blocks(weights: list[_Weight], block_size: int) -> None:
    for w in weights:
        length = w.operand.shape[w.reduction_axis]
        if length % block_size:
            reader = w.operand.uses()[0].op
            raise ConverterError(
                f"block size {block_size} does not divide the reduction dim ({length}) of "
                f"'{w.operand.name}' (shape {list(w.operand.shape)})",
                where=f"--block-size, {reader.op_type} '{reader.name}'",
                fix="give a block size that divides every matmul and gemm weight's reduction "
                    "dim")


def _read_through_dequantize(graph: Graph, w: _Weight, ctx: PassContext, stored: tuple[str, int],
                             budget: MemoryBudget) -> int:
    """Replace w's constant by dequantizeLinear of its quantized form; return the bytes now
    stored (q, scale and zero point)."""
    old = w.operand
    data_type, shift = stored
    q, scale = quantize(old.constant.numpy(), ctx.weights, w.output_axis, w.reduction_axis,
                        ctx.block_size or DEFAULT_BLOCK_SIZE)
    data = _stored(q, data_type, shift)
    budget.claim(data.nbytes + scale.nbytes, f"storing '{old.name}' as {data_type}",
                 where=f"--weights {ctx.weights}")
    name = old.name
    q_operand = graph.add_constant(graph.fresh_name(f"{name}_{data_type}"), data)
    scale_operand = graph.add_constant(graph.fresh_name(f"{name}_scale"), scale)
    zero = graph.add_constant(graph.fresh_name(f"{name}_zero_point"),
                              ConstantData(data_type, scale.shape, fill=shift))
    order = {id(op): i for i, op in enumerate(graph.operations)}
    first = min((u.op for u in old.uses()), key=lambda op: order[id(op)])
    dq = graph.add_operation("dequantizeLinear", [q_operand, scale_operand, zero],
                             name=graph.fresh_name(f"{name}/dequantize"), before=first)
    old.replace_all_uses_with(dq.output)
    graph.remove_operand(old)
    graph.rename(dq.output, name)
    return data.nbytes + scale.nbytes + zero.constant.nbytes * (zero.constant.fill is None)


@graph_pass("integer_weights")
def integer_weights(graph: Graph, ctx: PassContext) -> PassResult:
    if check_weights(ctx.weights) not in WEIGHT_OPS:
        return PassResult(False)
    candidates = [c for c in graph.constants.values() if c.data_type == "float32"]
    kept: dict[str, list[str]] = {}
    chosen: list[_Weight] = []
    for operand in candidates:
        why = _why_kept(operand, ctx)
        if isinstance(why, _Weight):
            chosen.append(why)
        else:
            kept.setdefault(why[0], []).append(why[1])
    if ctx.weights == "int4" and ctx.block_size is not None:
        _refuse_blocks(chosen, ctx.block_size)
    stored = _storage(ctx)
    if isinstance(stored, str) and chosen:
        kept.setdefault(stored, []).extend(w.operand.name for w in chosen)
        chosen = []
    budget = MemoryBudget(weights_bytes=sum(w.operand.constant.nbytes for w in chosen))
    before, after = 0, 0
    for w in chosen:
        before += w.operand.constant.nbytes
        after += _read_through_dequantize(graph, w, ctx, stored, budget)
    notes = [f"kept float32 ({why}): {', '.join(names)}" for why, names in kept.items()]
    if chosen:
        how = stored[0] + (f" (zero point {stored[1]:+d})" if stored[1] else "")
        blocks = f", blocks of {ctx.block_size or DEFAULT_BLOCK_SIZE}" \
            if ctx.weights == "int4" else ", per channel"
        notes.insert(0, f"{len(chosen)} weight{'s' * (len(chosen) != 1)} stored as {how}"
                        f"{blocks} with float32 scales: {format_size(before)} -> "
                        f"{format_size(after)}")
    counts = {"quantized": len(chosen), "kept float32": sum(map(len, kept.values())),
              "bytes_before": before, "bytes_after": after}  # of the weights quantized
    return PassResult(bool(chosen), counts, notes)
