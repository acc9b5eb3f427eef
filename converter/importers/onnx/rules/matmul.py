"""Matrix products: MatMul, Gemm, MatMulInteger and Einsum.

WebNN's matmul wants both operands at least 2-D; ONNX MatMul follows numpy, where a 1-D
operand is a row (first operand) or column (second) vector whose axis is dropped from the
result, so 1-D operands are reshaped around the matmul. Einsum is written as transposes,
reshapes, reductions and one batched matmul per pair of operands.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from .conv import (check_exact_accumulation, dequantized, largest_weight_sum, reshape)


def _numpy_matmul(ctx: ImportContext, a: Operand, b: Operand) -> Operand:
    """numpy.matmul semantics on WebNN's matmul (which needs rank >= 2 on both sides)."""
    if a.rank == 0 or b.rank == 0:
        raise Unsupported("MatMul of a scalar: numpy and ONNX require at least 1-D operands")
    a2 = reshape(ctx, a, (1, a.shape[0]), "row") if a.rank == 1 else a
    b2 = reshape(ctx, b, (b.shape[0], 1), "column") if b.rank == 1 else b
    y = ctx.emit("matmul", [a2, b2])
    if a.rank > 1 and b.rank > 1:
        return y
    shape = list(y.shape)
    if b.rank == 1:
        shape.pop(-1)
    if a.rank == 1:
        shape.pop(-2 if b.rank > 1 else -1)
    return reshape(ctx, y, shape, "drop_vector_axis")


@onnx_op("MatMul", webnn=("matmul", "reshape"))
def matmul(ctx: ImportContext, node: OnnxNode):
    return [_numpy_matmul(ctx, ctx.operand(node.input(0)), ctx.operand(node.input(1)))]


@onnx_op("Gemm", webnn=("gemm",))
def gemm(ctx: ImportContext, node: OnnxNode):
    a, b = ctx.operand(node.input(0)), ctx.operand(node.input(1))
    c = ctx.operand(node.input(2)) if node.input(2) else None
    if node.opset < 7 and c is not None and not node.attr("broadcast", 0) \
            and len(ctx.shape(node.input(2))) != 2:
        raise Unsupported("C without broadcast=1 must be [M, N] before opset 7")
    return [ctx.emit("gemm", [a, b, c], {
        "alpha": float(node.attr("alpha", 1.0)), "beta": float(node.attr("beta", 1.0)),
        "aTranspose": bool(node.attr("transA", 0)), "bTranspose": bool(node.attr("transB", 0))})]


@onnx_op("MatMulInteger", since=10, webnn=("dequantizeLinear", "matmul", "cast", "reshape",
                                          "slice", "add"))
def matmul_integer(ctx: ImportContext, node: OnnxNode):
    """(A - a_zero_point) x (B - b_zero_point) in int32. WebNN's matmul is float, whose sums
    are exact integers below 2^24; a longer sum (a long K, or an activation whose zero point
    is computed at run time, so only its type's range bounds it) is cut along K into parts
    that each stay exact, every part cast to int32 before they are added."""
    a_name, b_name = node.input(0), node.input(1)
    a_shape, b_shape = ctx.shape(a_name), ctx.shape(b_name)
    if not a_shape or not b_shape:
        raise Unsupported("MatMulInteger of a scalar: ONNX requires at least 1-D operands")
    k = b_shape[-2] if len(b_shape) > 1 else b_shape[0]
    # Per-row zero points of A lie along its rows (axis -2), per-column ones of B along its
    # columns (axis -1).
    b_axis = len(b_shape) - 1
    weight_sum = largest_weight_sum(ctx, b_name, node.input(3), (max(len(b_shape) - 2, 0),),
                                    b_axis, k)
    parts = 1  # the fewest equal parts of K whose sums all stay exact
    while not _exact(ctx, a_name, node.input(2),
                     weight_sum if parts == 1 else _part_bound(ctx, b_name, -(-k // parts))):
        parts = min(k, parts * 2)
    a_rows = (len(a_shape) - 2, a_shape[-2]) if len(a_shape) > 1 else None
    a = dequantized(ctx, a_name, node.input(2), len(a_shape), axis_size=a_rows)
    b = dequantized(ctx, b_name, node.input(3), len(b_shape),
                    axis_size=(b_axis, b_shape[-1]) if len(b_shape) > 1 else None)
    size = -(-k // parts)
    total = None
    for start in range(0, k, size):
        length = min(size, k - start)
        a_part = _k_slice(ctx, a, a.rank - 1, start, length, k)
        b_part = _k_slice(ctx, b, max(b.rank - 2, 0), start, length, k)
        y = ctx.emit("cast", [_numpy_matmul(ctx, a_part, b_part)], {"dataType": "int32"})
        total = y if total is None else ctx.emit("add", [total, y])
    return [total]


def _exact(ctx: ImportContext, a: str, a_zp: str | None, weight_sum: int) -> bool:
    try:
        check_exact_accumulation(ctx, a, a_zp, weight_sum)
    except Unsupported:
        return False
    return True


def _part_bound(ctx: ImportContext, b: str, terms: int) -> int:
    """A bound on sum |b - b_zp| over `terms` weights, from B's type range (safe for any
    part, where the whole-K sum of known weights no longer applies)."""
    from .conv import _integer_range

    lo, hi = _integer_range(ctx.dtype(b))
    return terms * (hi - lo)


def _k_slice(ctx: ImportContext, x: Operand, axis: int, start: int, length: int, k: int):
    if length == k:
        return x
    starts, sizes = [0] * x.rank, list(x.shape)
    starts[axis], sizes[axis] = start, length
    return ctx.emit("slice", [x], {"starts": starts, "sizes": sizes})


# -- Einsum ----------------------------------------------------------------------------------
def _parse_einsum(equation: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    """The equation's input terms and output term, with '...' replaced by one capital letter per
    broadcast axis, and the implicit output (letters used once, sorted) made explicit."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"equation '{equation}' has {len(terms)} operands, the node "
                          f"{len(ranks)}")
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks):
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, rank - (len(term) - 3))
    spread = "".join(chr(ord("A") + i) for i in range(ellipsis_rank))
    expanded = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            own = rank - (len(term) - 3)
            term = term.replace("...", spread[ellipsis_rank - own:])
        if len(term) != rank or not term.isalpha():
            raise Unsupported(f"einsum term '{term}' does not match its operand's rank {rank}")
        expanded.append(term)
    if arrow:
        out = rhs.replace("...", spread)
    else:
        letters = "".join(expanded)
        out = spread + "".join(sorted(c for c in set(letters)
                                      if letters.count(c) == 1 and c.islower()))
    if not out.isalpha() and out:
        raise Unsupported(f"einsum output term '{rhs}' is not letters")
    return expanded, out


class _Term:
    """An operand with one letter per axis."""

    def __init__(self, operand: Operand, letters: str):
        self.operand, self.letters = operand, letters

    def size(self, letter: str) -> int:
        return self.operand.shape[self.letters.index(letter)]


def _diagonal(ctx: ImportContext, t: _Term) -> _Term:
    """Take the diagonal over each letter repeated within one term (e.g. 'ii' -> 'i')."""
    while True:
        repeated = next((c for c in t.letters if t.letters.count(c) > 1), None)
        if repeated is None:
            return t
        first = t.letters.index(repeated)
        second = t.letters.index(repeated, first + 1)
        n = t.operand.shape[first]
        if t.operand.shape[second] != n:
            raise Unsupported(f"einsum letter '{repeated}' has sizes {n} and "
                              f"{t.operand.shape[second]}")
        rest = [i for i in range(len(t.letters)) if i not in (first, second)]
        moved = _transpose(ctx, t.operand, rest + [first, second])
        flat = reshape(ctx, moved, [t.operand.shape[i] for i in rest] + [n * n], "flatten")
        # Element (i, i) of an n x n block sits at i * (n + 1) of its flattening.
        indices = ctx.constant(np.arange(n, dtype=np.int32) * (n + 1), "int32")
        picked = ctx.emit("gather", [flat, indices], {"axis": len(rest)}, suffix="diagonal")
        t = _Term(picked, "".join(t.letters[i] for i in rest) + repeated)


def _transpose(ctx: ImportContext, x: Operand, permutation: Sequence[int]) -> Operand:
    if list(permutation) == list(range(x.rank)):
        return x
    return ctx.emit("transpose", [x], {"permutation": list(permutation)})


def _sum_out(ctx: ImportContext, t: _Term, keep: set[str]) -> _Term:
    """Sum over the letters no later operand and no output needs."""
    axes = [i for i, c in enumerate(t.letters) if c not in keep]
    if not axes:
        return t
    summed = ctx.emit("reduceSum", [t.operand], {"axes": axes, "keepDimensions": False})
    return _Term(summed, "".join(c for c in t.letters if c in keep))


def _contract(ctx: ImportContext, a: _Term, b: _Term, keep: set[str]) -> _Term:
    """a * b summed over their shared letters not in `keep`, as one batched matmul:
    [batch, left, shared] x [batch, shared, right]."""
    batch = [c for c in a.letters if c in b.letters and c in keep]
    shared = [c for c in a.letters if c in b.letters and c not in keep]
    left = [c for c in a.letters if c not in b.letters]
    right = [c for c in b.letters if c not in a.letters]
    for c in batch + shared:
        if a.size(c) != b.size(c):
            raise Unsupported(f"einsum letter '{c}' has sizes {a.size(c)} and {b.size(c)}; "
                              f"broadcasting a size-1 axis is not imported")

    def grouped(t: _Term, order: list[str], groups: list[list[str]]) -> Operand:
        moved = _transpose(ctx, t.operand, [t.letters.index(c) for c in order])
        sizes = [int(np.prod([t.size(c) for c in g], dtype=np.int64)) for g in groups]
        return reshape(ctx, moved, sizes, "group")

    lhs = grouped(a, batch + left + shared, [batch, left, shared])
    rhs = grouped(b, batch + shared + right, [batch, shared, right])
    product = ctx.emit("matmul", [lhs, rhs])
    letters = batch + left + right
    sizes = [a.size(c) if c in a.letters else b.size(c) for c in letters]
    return _Term(reshape(ctx, product, sizes, "ungroup"), "".join(letters))


@onnx_op("Einsum", since=12, webnn=("transpose", "reshape", "reduceSum", "matmul", "gather"))
def einsum(ctx: ImportContext, node: OnnxNode):
    names = [n for n in node.inputs if n is not None]
    operands = [ctx.operand(n) for n in names]
    terms, out = _parse_einsum(node.attr("equation"), [x.rank for x in operands])
    for c in out:
        if not any(c in t for t in terms):
            raise Unsupported(f"einsum output letter '{c}' names no input axis")
    pending = [_diagonal(ctx, _Term(x, t)) for x, t in zip(operands, terms)]
    result = pending[0]
    for i in range(1, len(pending)):
        later = set(out).union(*(p.letters for p in pending[i + 1:]))
        # Letters only one side has and nothing after needs are summed before the product.
        result = _sum_out(ctx, result, later | set(pending[i].letters))
        t = _sum_out(ctx, pending[i], later | set(result.letters))
        result = _contract(ctx, result, t, later)
    result = _sum_out(ctx, result, set(out))
    order = [result.letters.index(c) for c in out]
    y = _transpose(ctx, result.operand, order)
    if y is operands[0] or y.kind != "intermediate":
        y = ctx.emit("identity", [y])
    return [y]
