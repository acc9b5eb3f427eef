"""Spectral ops: DFT (opset 17, axis an attribute; opset 20, axis an input), STFT, the
window generators HannWindow, HammingWindow and BlackmanWindow, and MelWeightMatrix.

WebNN has no FFT and no complex type, so a transform of length L along one axis is two
matmuls with constant matrices: the real and imaginary parts of exp(-+2 pi i t k / L) (the
angles reduced modulo L and evaluated in float64 before rounding to the input's type). The
complex values stay two real tensors until the output stacks them as ONNX's trailing [.., 2].
A matrix row per input sample folds dft_length's zero padding (rows past the input are not
needed) and truncation (rows past L are zero) into the constants. The cost is L * K
multiply-adds per transformed vector, against an FFT's L log L: fine for the frame lengths of
audio front ends, and bounded below.
"""
from __future__ import annotations

import numpy as np

from .... import dtypes
from ....budget import shape_bytes
from ....ir import Operand
from ..context import ImportContext, OnnxNode
from ..registry import Unsupported, onnx_op
from ._emit import emit, transpose
from .constants import claim
from .shape_ops import known_scalar

# The largest transform length: its two matrices hold 2 * L * L values.
MAX_DFT_LENGTH = 4096


def _reshape(ctx, x: Operand, shape) -> Operand:
    return emit(ctx, "reshape", x, newShape=list(shape))


def _matrices(rows: int, length: int, bins: int, inverse: bool, real_output: bool,
              np_type) -> tuple[np.ndarray, np.ndarray]:
    """(real, imaginary) parts of the [rows, bins] transform matrix W with Y = X @ W.

    real_output (IRFFT): W maps one-sided complex bins (rows) to `bins` real samples, every
    bin standing for itself and its mirror image, as the conjugate symmetry of a real
    signal's spectrum makes them equal: the output is sum_k c_k (Xr cos - Xi sin) / L with
    c_k = 2, except 1 for bin 0 and (L even) bin L / 2, which have no mirror."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(bins, dtype=np.int64)[None, :]
    angle = 2 * np.pi * ((r * c) % length) / length
    sign = 1.0 if inverse else -1.0
    real, imag = np.cos(angle), sign * np.sin(angle)
    if real_output:  # rows are bins, columns samples
        used = r < length // 2 + 1
        mirrored = ~((r == 0) | ((length % 2 == 0) & (r == length // 2)))
        real, imag = real * used * (1 + mirrored), imag * used * (1 + mirrored)
    else:  # rows are samples, columns bins: samples past the length are cut off
        real, imag = real * (r < length), imag * (r < length)
    if inverse:
        real, imag = real / length, imag / length
    return real.astype(np_type), imag.astype(np_type)


def transform_last_axis(ctx: ImportContext, real: Operand, imag: Operand | None, length: int,
                        *, inverse: bool = False, onesided: bool = False
                        ) -> tuple[Operand, Operand | None]:
    """The DFT of length `length` along the last axis of real + i imag (imag None: a real
    signal): returns (real, imaginary) parts, [..., bins]; IRFFT (inverse and onesided)
    returns (real samples, None)."""
    if not 0 < length <= MAX_DFT_LENGTH:
        raise Unsupported(f"a transform of length {length}: it must be 1 to {MAX_DFT_LENGTH} "
                          f"(it is imported as a dense matrix)")
    rows = real.shape[-1]
    irfft = inverse and onesided
    bins = length if irfft or not onesided else length // 2 + 1
    np_type = dtypes.numpy_dtype(real.data_type)
    w_re, w_im = _matrices(rows, length, bins, inverse, irfft, np_type)
    if real.rank < 2:
        raise Unsupported("a 1-D signal: a DFT input has at least a signal and a complex axis")

    def product(x: Operand, w: np.ndarray) -> Operand:
        return emit(ctx, "matmul", x, ctx.constant(w, real.data_type))

    if irfft:  # Re(X W) with W's imaginary part already signed: Xr W_re - Xi W_im
        out = product(real, w_re)
        if imag is not None:
            out = emit(ctx, "sub", out, product(imag, w_im))
        return out, None
    out_re, out_im = product(real, w_re), product(real, w_im)
    if imag is not None:  # (Xr + i Xi)(Wr + i Wi)
        out_re = emit(ctx, "sub", out_re, product(imag, w_im))
        out_im = emit(ctx, "add", out_im, product(imag, w_re))
    return out_re, out_im


def _parts(ctx: ImportContext, x: Operand) -> tuple[Operand, Operand | None]:
    """ONNX's [..., 1] (real) or [..., 2] (complex) signal as its parts, trailing axis gone."""
    if x.shape[-1] not in (1, 2):
        raise Unsupported(f"the last axis has length {x.shape[-1]}; it must be 1 (real) or 2 "
                          f"(complex)")
    shape = x.shape[:-1]
    if x.shape[-1] == 1:
        return _reshape(ctx, x, shape), None
    halves = emit(ctx, "split", x, splits=[1, 1], axis=x.rank - 1)
    return _reshape(ctx, halves[0], shape), _reshape(ctx, halves[1], shape)


def _stacked(ctx: ImportContext, real: Operand, imag: Operand | None) -> Operand:
    """Parts back in ONNX's form: [..., 2], or [..., 1] for a real result."""
    real = _reshape(ctx, real, (*real.shape, 1))
    if imag is None:
        return real
    return emit(ctx, "concat", real, _reshape(ctx, imag, (*imag.shape, 1)), axis=real.rank - 1)


def _moved(ctx, x: Operand, axis: int, to_last: bool) -> Operand:
    if axis == x.rank - 1:
        return x
    perm = [a for a in range(x.rank) if a != axis] + [axis]
    if not to_last:
        perm = [perm.index(a) for a in range(x.rank)]
    return transpose(ctx, x, perm)


def _dft(ctx: ImportContext, node: OnnxNode, axis: int):
    x = ctx.operand(node.input(0))
    rank = x.rank
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise Unsupported(f"axis {axis} is outside [-{rank}, -2] and [0, {rank - 2}]")
    axis %= rank
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    real, imag = _parts(ctx, x)
    n = real.shape[axis]
    if node.input(1) is not None:
        length = int(known_scalar(ctx, node.input(1), "dft_length"))
    else:
        length = 2 * (n - 1) if inverse and onesided else n
    real, imag = (_moved(ctx, p, axis, True) if p is not None else None for p in (real, imag))
    out_re, out_im = transform_last_axis(ctx, real, imag, length, inverse=inverse,
                                         onesided=onesided)
    out_re, out_im = (_moved(ctx, p, axis, False) if p is not None else None
                      for p in (out_re, out_im))
    return [_stacked(ctx, out_re, out_im)]


_DFT_OPS = ("split", "reshape", "transpose", "matmul", "add", "sub", "concat")


@onnx_op("DFT", since=17, webnn=_DFT_OPS)
def dft_17(ctx: ImportContext, node: OnnxNode):
    return _dft(ctx, node, int(node.attr("axis", 1)))


@onnx_op("DFT", since=20, webnn=_DFT_OPS)
def dft_20(ctx: ImportContext, node: OnnxNode):
    axis = -2 if node.input(2) is None else int(known_scalar(ctx, node.input(2), "the axis"))
    return _dft(ctx, node, axis)


@onnx_op("STFT", since=17, webnn=_DFT_OPS + ("gather", "mul"))
def stft(ctx: ImportContext, node: OnnxNode):
    """Frames are gathered with constant indices (frame f holds samples f * step ..
    f * step + frame_length - 1), weighted by the window (folded into the matrices when it
    is known), and transformed along their last axis; [batch, frames, bins, 2]."""
    signal = ctx.operand(node.input(0))
    if signal.rank != 3:
        raise Unsupported(f"signal of rank {signal.rank}: STFT takes [batch, length, 1 or 2]")
    step = int(known_scalar(ctx, node.input(1), "frame_step"))
    window_name = node.input(2)
    if node.input(3) is not None:
        frame = int(known_scalar(ctx, node.input(3), "frame_length"))
    elif window_name is not None:
        frame = ctx.shape(window_name)[0]
    else:
        frame = signal.shape[1]
    samples = signal.shape[1]
    if step <= 0 or not 0 < frame <= samples:
        raise Unsupported(f"frame_step {step} and frame_length {frame} do not frame "
                          f"{samples} samples")
    if window_name is not None and tuple(ctx.shape(window_name)) != (frame,):
        raise Unsupported(f"the window has shape {list(ctx.shape(window_name))}; it must be "
                          f"[{frame}]")
    count = (samples - frame) // step + 1
    starts = np.arange(count, dtype=np.int64)[:, None] * step
    index = ctx.constant((starts + np.arange(frame, dtype=np.int64)[None, :]).astype(np.int32),
                         "int32")
    real, imag = _parts(ctx, signal)  # [batch, length]
    frames = [emit(ctx, "gather", p, index, axis=1) if p is not None else None
              for p in (real, imag)]  # [batch, frames, frame_length]
    if window_name is not None:
        window = ctx.operand(window_name)
        frames = [emit(ctx, "mul", f, window) if f is not None else None for f in frames]
    onesided = bool(node.attr("onesided", 1))
    out_re, out_im = transform_last_axis(ctx, frames[0], frames[1], frame, onesided=onesided)
    return [_stacked(ctx, out_re, out_im)]


# -- window generators -------------------------------------------------------------------------
def _window(kind: str):
    def rule(ctx: ImportContext, node: OnnxNode):
        """A window is a constant of its size, which must be known (then the node folds
        before this rule runs); computed here from the spec's formula otherwise."""
        size = int(known_scalar(ctx, node.input(0), "the window size"))
        claim(ctx, node, shape_bytes([size], 8))  # the float64 phases, before np.arange
        periodic = bool(node.attr("periodic", 1))
        denominator = size if periodic else size - 1
        phase = 2 * np.pi * np.arange(size) / max(denominator, 1)
        if kind == "hann":
            values = 0.5 - 0.5 * np.cos(phase)
        elif kind == "hamming":
            values = 25 / 46 - (1 - 25 / 46) * np.cos(phase)
        else:
            values = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
        to = int(node.attr("output_datatype", 1))
        return [values.astype(onnx_np_type(to))]
    return rule


def onnx_np_type(elem: int):
    import onnx

    return onnx.helper.tensor_dtype_to_np_dtype(elem)


for _op, _kind in (("HannWindow", "hann"), ("HammingWindow", "hamming"),
                   ("BlackmanWindow", "blackman")):
    onnx_op(_op, since=17, webnn=())(_window(_kind))


@onnx_op("MelWeightMatrix", since=17, webnn=())
def mel_weight_matrix(ctx: ImportContext, node: OnnxNode):
    """A constant filterbank of its (known) sizes, rates and edges: with all five inputs
    known the node is computed at conversion time, by ONNX's reference implementation."""
    for name, what in zip(node.inputs, ("num_mel_bins", "dft_length", "sample_rate",
                                        "lower_edge_hertz", "upper_edge_hertz")):
        ctx.require_known(name, what)
    bins, length = (abs(int(known_scalar(ctx, n, what)))
                    for n, what in zip(node.inputs, ("num_mel_bins", "dft_length")))
    # The result is [length / 2 + 1, bins]; ONNX's implementation also counts bins + 2 edges.
    claim(ctx, node, shape_bytes([length // 2 + 1, bins + 2], 8))
    from ..folding import fold

    return fold(ctx, node)
