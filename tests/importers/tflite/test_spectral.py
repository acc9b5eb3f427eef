"""Spectral ops (issue 17): RFFT2D as matrix products with constant DFT matrices, its complex64
result carried as two float32 parts into REAL, IMAG and COMPLEX_ABS, and moved part by part
through the data-movement ops the converter puts around it. Checked against LiteRT and against
numpy.fft in float64."""
from __future__ import annotations

import numpy as np
import pytest

from converter.runtimes.execute import run
from converter.importers.tflite import import_tflite
from converter.verification.parity import Bounds
from converter.testing.tflite_fixtures import Const, Input, Output, TfliteBuilder, one_op

from .helpers import check, ops_of, rand, refused


def _budget(hc: int, wc: int, fh: int, largest: float) -> Bounds:
    """The policy's gemm budget (K x 2) for the row products over wc, plus, when there is a
    column transform, two products over hc and their sum; as ULPs of the largest output, an
    absolute bound, since DFT bins are sums that cancel to near zero."""
    ulps = 2 * wc + (2 * (2 * hc) + 1 if fh > 1 else 0)
    return Bounds(atol=float(ulps * np.spacing(np.float32(largest))), rtol=0)


def _rfft2d_model(shape, lengths, parts=("re", "im", "abs")):
    b = TfliteBuilder()
    x = b.input("x", shape)
    f = b.constant("fft_length", np.array(lengths, np.int32))
    out = list(shape[:-2]) + [lengths[0], lengths[1] // 2 + 1]
    y = b.tensor("spectrum", out, "complex64")
    b.op("RFFT2D", [x, f], [y])
    outputs = []
    for part, code in (("re", "REAL"), ("im", "IMAG"), ("abs", "COMPLEX_ABS")):
        if part in parts:
            outputs.append(b.tensor(part, out))
            b.op(code, [y], [outputs[-1]])
    return b.build(outputs)


@pytest.mark.parametrize("shape, lengths", [
    ([2, 6, 8], [8, 8]),  # rows zero-padded
    ([1, 5, 7], [4, 8]),  # rows cropped, columns padded
    ([3, 16], [1, 16]),  # rank 2, a one-point column transform
    ([2, 3, 3, 32], [4, 16]),  # rank 4, columns cropped
    ([1, 64, 128], [64, 128]),
])
def test_rfft2d_real_imag_abs_against_litert_and_numpy(shape, lengths):
    x = rand(*shape)
    want = np.fft.rfft2(x.astype(np.float64), s=lengths)
    hc, wc = min(shape[-2], lengths[0]), min(shape[-1], lengths[1])
    bounds = _budget(hc, wc, lengths[0], np.abs(want).max())
    graph, got = check(_rfft2d_model(shape, lengths), {"x": x}, bounds)
    for name, reference in (("re", want.real), ("im", want.imag), ("abs", np.abs(want))):
        assert got[name].shape == reference.shape
        assert np.abs(got[name] - reference).max() <= bounds.atol, name
    assert "matmul" in ops_of(graph) and ops_of(graph).count("matmul") == \
        (2 if lengths[0] == 1 else 6)


def test_rfft_as_the_converter_writes_it_moves_complex_parts_through_squeeze():
    """tf.signal.rfft of [4, 32] frames: EXPAND_DIMS to [4, 1, 32], RFFT2D with [1, 32], then
    SQUEEZE and a RESHAPE of the complex result, and its magnitude."""
    b = TfliteBuilder()
    x = b.input("frames", [4, 32])
    axis = b.constant("axis", np.array(1, np.int32))
    x3 = b.tensor("frames3", [4, 1, 32])
    b.op("EXPAND_DIMS", [x, axis], [x3])
    y = b.tensor("spectrum3", [4, 1, 17], "complex64")
    b.op("RFFT2D", [x3, b.constant("n", np.array([1, 32], np.int32))], [y])
    y2 = b.tensor("spectrum", [4, 17], "complex64")
    b.op("SQUEEZE", [y], [y2], squeezeDims=[1])
    y3 = b.tensor("bins", [2, 34], "complex64")
    b.op("RESHAPE", [y2, b.constant("shape", np.array([2, 34], np.int32))], [y3])
    m = b.tensor("magnitude", [2, 34])
    b.op("COMPLEX_ABS", [y3], [m])
    frames = rand(4, 32)
    want = np.abs(np.fft.rfft(frames.astype(np.float64))).reshape(2, 34)
    bounds = _budget(1, 32, 1, want.max())
    _, got = check(b.build([m]), {"frames": frames}, bounds)
    assert np.abs(got["magnitude"] - want).max() <= bounds.atol


@pytest.mark.parametrize("code, options, inputs, out_shape, index", [
    ("TRANSPOSE", {}, [[1, 0]], [5, 4], lambda z: z.T),
    ("STRIDED_SLICE", {}, [[0, 1], [4, 5], [2, 2]], [2, 2], lambda z: z[0:4:2, 1:5:2]),
    ("SLICE", {}, [[1, 0], [2, 5]], [2, 5], lambda z: z[1:3]),
])
def test_complex_values_move_part_by_part(code, options, inputs, out_shape, index):
    b = TfliteBuilder()
    x = b.input("x", [4, 8])
    y = b.tensor("spectrum", [4, 5], "complex64")
    b.op("RFFT2D", [x, b.constant("n", np.array([4, 8], np.int32))], [y])
    z = b.tensor("moved", out_shape, "complex64")
    b.op(code, [y] + [b.constant(f"arg{i}", np.array(v, np.int32)) for i, v in enumerate(inputs)],
         [z], **options)
    outs = [b.tensor("re", out_shape), b.tensor("im", out_shape)]
    b.op("REAL", [z], [outs[0]])
    b.op("IMAG", [z], [outs[1]])
    xv = rand(4, 8)
    want = index(np.fft.rfft2(xv.astype(np.float64)))
    bounds = _budget(4, 8, 4, np.abs(want).max())
    _, got = check(b.build(outs), {"x": xv}, bounds)
    np.testing.assert_allclose(got["re"] + 1j * got["im"], want, rtol=0, atol=bounds.atol)


def test_real_and_imag_of_a_complex_constant_are_exact():
    z = np.array([[1 + 2j, -3.5 + 0j], [0.25 - 1j, 7 + 8j]], np.complex64)
    b = TfliteBuilder()
    c = b.constant("z", z)
    x = b.input("x", [2, 2])
    re, im, s = b.tensor("re", [2, 2]), b.tensor("im", [2, 2]), b.tensor("sum", [2, 2])
    b.op("REAL", [c], [re])
    b.op("IMAG", [c], [im])
    b.op("ADD", [re, x], [s])
    _, got = check(b.build([s, im]), {"x": np.zeros((2, 2), np.float32)}, Bounds(ulp=0))
    np.testing.assert_array_equal(got["sum"], z.real)
    np.testing.assert_array_equal(got["im"], z.imag)


def test_a_complex_graph_output_is_refused_saying_what_to_output():
    model = one_op("RFFT2D", [Input("x", [4, 8]), Const(np.array([4, 8], np.int32))],
                   [Output("y", [4, 5], "complex64")])
    assert "output 'y' is complex64: WebNN has no complex type (output its REAL and IMAG " \
        "parts, or its COMPLEX_ABS, instead)" in str(refused(model))


def test_a_complex_tensor_read_by_a_real_op_is_refused_by_name():
    b = TfliteBuilder()
    x = b.input("x", [4, 8])
    y = b.tensor("spectrum", [4, 5], "complex64")
    b.op("RFFT2D", [x, b.constant("n", np.array([4, 8], np.int32))], [y])
    z = b.tensor("doubled", [4, 5], "complex64")
    b.op("ADD", [y, y], [z])
    r = b.tensor("re", [4, 5])
    b.op("REAL", [z], [r])
    message = str(refused(b.build([r])))
    assert "ADD (op 1 -> 'doubled'): it reads tensor 1 'spectrum', which is complex64: WebNN " \
        "has no complex type, and ADD is imported for real tensors only" in message


def test_rfft2d_lengths_that_are_not_powers_of_two_are_refused_as_litert_does():
    message = str(refused(_rfft2d_model([4, 6], [4, 6], parts=("abs",))))
    assert "its fft_length [4, 6] is not two powers of 2, which LiteRT's kernel requires" \
        in message


def test_rfft2d_runs_without_litert_on_a_numpy_reference_too():
    """The same graph with a batch of 3 through import_tflite's input_shapes: numpy only."""
    x = rand(3, 8, 16)
    graph = import_tflite(_rfft2d_model([1, 8, 16], [8, 16], parts=("abs",)),
                          input_shapes={"x": [3, 8, 16]})
    got = run(graph, {"x": x})["abs"]
    want = np.abs(np.fft.rfft2(x.astype(np.float64)))
    assert np.abs(got - want).max() <= _budget(8, 16, 8, want.max()).atol


def test_a_complex_constant_of_the_wrong_size_is_refused():
    b = TfliteBuilder()
    c = b.constant("z", np.zeros(4, np.complex64), stored=np.zeros(3, np.complex64))
    re = b.tensor("re", [4])
    b.op("REAL", [c], [re])
    assert "'z' has 24 bytes; its shape [4] of complex64 needs 32" in str(refused(b.build([re])))


def test_an_fft_length_whose_dft_matrix_is_too_big_is_refused_before_building_it():
    message = str(refused(_rfft2d_model([4, 8], [1, 1 << 26], parts=("abs",))))
    assert "needs a DFT matrix of 268435464 values, more than the 16777216" in message
