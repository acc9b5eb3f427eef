"""Reference kernels for matmul and gemm (spec: matmul, gemm)."""
from __future__ import annotations

import numpy as np

from .core import kernel


@kernel("matmul")
def matmul(op, ins, env):
    """Stacks of [M, K] x [K, N] with the batch dimensions broadcast (numpy's matmul rule is
    the spec's for rank >= 2)."""
    return np.matmul(ins[0], ins[1])


@kernel("gemm")
def gemm(op, ins, env):
    """alpha * A' * B' + beta * C, where A' and B' are transposed when aTranspose/bTranspose."""
    a, b, c = ins
    dt = op.inputs[0].data_type
    if op.attr("aTranspose"):
        a = a.T
    if op.attr("bTranspose"):
        b = b.T
    out = env.number(op.attr("alpha"), dt) * (a @ b)
    if c is not None:
        out = out + env.number(op.attr("beta"), dt) * c
    return out
