"""Spectral ops and complex values: RFFT2D, COMPLEX_ABS, REAL, IMAG, and data movement of
complex tensors.

WebNN has no complex type, so a COMPLEX64 tensor travels through the import as a `Complex`:
two float32 operands, its real and imaginary parts (see context.py). RFFT2D is two matrix
products with constant DFT matrices, one per transformed axis; ops that only move values
(RESHAPE, SQUEEZE ... the converter wraps RFFT2D in them to make tf.signal.rfft) apply to each
part alike. TFLite has no 1-D RFFT builtin: its converter writes rfft as RFFT2D with an
fft_length of [1, n] between an EXPAND_DIMS and a SQUEEZE.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ....ir import Operand
from ..context import Complex, ImportContext, Value
from ..model_file import Operator
from ..registry import Unsupported, tflite_op
from ._common import emit

# Ops applied to a complex tensor's real and imaginary parts alike: they move values without
# combining them, so (a + ib) moved is (a moved) + i(b moved). Those LiteRT runs on complex64
# (its CONCATENATION, for one, refuses it).
PART_BY_PART = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "STRIDED_SLICE",
                          "SLICE"})


def part_by_part(ctx: ImportContext, op: Operator, rule: Callable) -> list:
    """Run a data-movement rule once on the real parts of its complex inputs and once on the
    imaginary parts; pair the results. Its other inputs (shapes, axes) are read as usual."""
    slots = [k for k in range(len(op.inputs)) if ctx.is_complex(k)]
    inputs = {k: ctx.complex(k) for k in slots}
    saved = {op.inputs[k]: ctx.values[op.inputs[k]] for k in slots}
    runs = []
    try:
        for part in ("real", "imag"):
            for k in slots:
                t = ctx.tensor(k)
                ctx.values[t.index] = Value(t, operand=getattr(inputs[k], part))
            runs.append(list(rule(ctx, op)))
    finally:
        ctx.values.update(saved)
    results = []
    for k, (re, im) in enumerate(zip(*runs)):
        if re is None and im is None:
            results.append(None)
        elif isinstance(re, Operand) and isinstance(im, Operand) \
                and ctx.out_tensor(k).type_name == "COMPLEX64":
            results.append(Complex(re, im))
        else:
            raise Unsupported(f"its complex result {ctx.out_tensor(k)} is not a moved copy of "
                              f"its complex inputs")
    return results


# The largest DFT matrix built at conversion time (64 MiB of float32): a file's fft_length is
# checked against it before any array is made.
_MAX_MATRIX = 1 << 24


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _dft(inputs: int, outputs: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the DFT angles 2 pi n k / length for n < inputs, k < outputs, as
    [inputs, outputs] float32. n k is reduced modulo the length first, so the angle stays in
    [0, 2 pi) and float64 rounds it no matter how long the transform."""
    nk = np.outer(np.arange(inputs, dtype=np.int64), np.arange(outputs, dtype=np.int64))
    angle = 2 * np.pi * (nk % length) / length
    cos, sin = np.cos(angle), np.sin(angle)
    # Whole quarter turns exactly: float64 gives cos(pi / 2) as 6e-17, not 0, so a bin whose
    # real part is 0 in LiteRT's FFT (x = [0, 1, 0, -1]: bin 1 is -2i) came out 1e-16 here,
    # and a CAST of it to BOOL said True where LiteRT says False.
    quarter, rest = np.divmod(4 * (nk % length), length)
    exact = rest == 0
    cos = np.where(exact, np.array([1.0, 0.0, -1.0, 0.0])[quarter % 4], cos)
    sin = np.where(exact, np.array([0.0, 1.0, 0.0, -1.0])[quarter % 4], sin)
    return cos.astype(np.float32), sin.astype(np.float32)


@tflite_op("RFFT2D", webnn=("slice", "matmul", "add", "sub"))
def rfft2d(ctx: ImportContext, op: Operator):
    """The 2-D DFT of the last two axes of a real tensor, onesided: [..., H, W] with
    fft_length [fh, fw] gives [..., fh, fw / 2 + 1]. The input is cropped or zero-padded to
    fft_length, as LiteRT's kernel does; zero padding is rows of the DFT matrix left out.

    With x cropped to [Hc, Wc], the row transform is A = x C_w - i x S_w (C and S the cos and
    sin matrices), then the column transform Y = (C_h - i S_h) A gives
    Re Y = C_h Re A + S_h Im A and Im Y = C_h Im A - S_h Re A.
    """
    x = ctx.real(0)
    if x.data_type != "float32":
        raise Unsupported(f"its input is {x.data_type}; LiteRT's RFFT2D takes float32")
    if x.rank < 2:
        raise Unsupported(f"its input has rank {x.rank}; it needs at least 2")
    lengths = [int(n) for n in ctx.require_known(1, "fft_length").reshape(-1)]
    if len(lengths) != 2 or not all(_power_of_two(n) for n in lengths):
        raise Unsupported(f"its fft_length {lengths} is not two powers of 2, which LiteRT's "
                          f"kernel requires")
    fh, fw = lengths
    *batch, h, w = x.shape
    hc, wc, bins = min(h, fh), min(w, fw), fw // 2 + 1
    values = max(wc * bins, hc * fh)
    if values > _MAX_MATRIX:
        raise Unsupported(f"its fft_length {lengths} needs a DFT matrix of {values} values, "
                          f"more than the {_MAX_MATRIX} this importer builds")
    if (hc, wc) != (h, w):
        x = ctx.emit("slice", [x], {"starts": [0] * x.rank, "sizes": [*batch, hc, wc]},
                     suffix="crop")
    lead = [1] * len(batch)
    name = ctx.out_tensor().name

    def matrix(values: np.ndarray, what: str) -> Operand:
        return ctx.constant(values.reshape(lead + list(values.shape)), "float32",
                            name=f"{name}/{what}")

    cos_w, sin_w = _dft(wc, bins, fw)
    a_re = emit(ctx, "matmul", x, matrix(cos_w, "dft_cos_w"), suffix="rows_re")
    # Im A = -x S_w: the sign goes into the constant.
    a_im = emit(ctx, "matmul", x, matrix(-sin_w, "dft_minus_sin_w"), suffix="rows_im")
    if fh == 1:  # a one-point column transform is the identity (hc is 1 too)
        return [Complex(a_re, a_im)]
    cos_h, sin_h = _dft(hc, fh, fh)
    c_h, s_h = matrix(cos_h.T, "dft_cos_h"), matrix(sin_h.T, "dft_sin_h")
    y_re = emit(ctx, "add", emit(ctx, "matmul", c_h, a_re, suffix="cols_c_re"),
                emit(ctx, "matmul", s_h, a_im, suffix="cols_s_im"), suffix="re")
    y_im = emit(ctx, "sub", emit(ctx, "matmul", c_h, a_im, suffix="cols_c_im"),
                emit(ctx, "matmul", s_h, a_re, suffix="cols_s_re"), suffix="im")
    return [Complex(y_re, y_im)]


@tflite_op("REAL", webnn=("identity",))
def real(ctx: ImportContext, op: Operator):
    return [_result(ctx, ctx.complex(0).real)]


@tflite_op("IMAG", webnn=("identity",))
def imag(ctx: ImportContext, op: Operator):
    return [_result(ctx, ctx.complex(0).imag)]


@tflite_op("COMPLEX_ABS", webnn=("mul", "add", "sqrt"))
def complex_abs(ctx: ImportContext, op: Operator):
    """|z| = sqrt(re^2 + im^2). (LiteRT's kernel uses std::abs, which avoids overflow in the
    squares; float32 squares overflow only past 1.8e19.)"""
    z = ctx.complex(0)
    squares = emit(ctx, "add", emit(ctx, "mul", z.real, z.real, suffix="re2"),
                   emit(ctx, "mul", z.imag, z.imag, suffix="im2"), suffix="norm2")
    return [emit(ctx, "sqrt", squares)]


def _result(ctx: ImportContext, part: Operand) -> Operand:
    """A part as the op's own result (the part may be another op's, or a constant)."""
    return emit(ctx, "identity", part)
