"""ONNX DFT (opsets 17 and 20), STFT and window generators imported as matmuls with constant
DFT matrices, checked against numpy.fft on float64 copies of the inputs, within the float32
error budget of a length-L transform: each output is a sum of L products, so its error is
at most about (L + 2) float32 epsilons times the sum of the magnitudes it adds."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from .helpers import imported, ops_of, rand

F32 = onnx.TensorProto.FLOAT
EPS32 = 2.0 ** -23


def _model(node, inputs: dict, initializers: dict, opset: int):
    vis = [helper.make_tensor_value_info(n, F32, a.shape) for n, a in inputs.items()]
    graph = helper.make_graph([node], "spectral", vis,
                              [helper.make_tensor_value_info("y", F32, None)],
                              [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


def _within_budget(got, want, length, magnitude):
    bound = (length + 2) * EPS32 * magnitude + 1e-30
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= bound), np.abs(got - want).max() / bound


def _complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]


def _pack(z):
    return np.stack([z.real, z.imag], axis=-1)


@pytest.mark.parametrize("axis", [1, 2, -2])
def test_dft_20_complex_forward_matches_numpy(axis):
    x = rand(2, 8, 6, 2)
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"])
    model = _model(node, {"x": x}, {"axis": np.array(axis, np.int64)}, 20)
    graph, (y,) = imported(model, {"x": x})
    z = _complex(x.astype(np.float64))
    along = axis % 4  # the ONNX axis counts the trailing complex axis; z has none
    want = _pack(np.fft.fft(z, axis=along))
    _within_budget(y, want, x.shape[along], np.abs(z).sum(axis=along).max())
    assert "matmul" in ops_of(graph)


@pytest.mark.parametrize("dft_length", [5, 8, 12])
def test_dft_17_real_onesided_pads_and_truncates_like_numpy(dft_length):
    x = rand(3, 8, 1)
    node = helper.make_node("DFT", ["x", "n"], ["y"], axis=1, onesided=1)
    model = _model(node, {"x": x}, {"n": np.array(dft_length, np.int64)}, 17)
    _, (y,) = imported(model, {"x": x})
    want = _pack(np.fft.rfft(x[..., 0].astype(np.float64), n=dft_length, axis=1))
    assert y.shape == (3, dft_length // 2 + 1, 2)
    _within_budget(y, want, dft_length, np.abs(x).sum(axis=1).max())


def test_dft_17_inverse_of_complex_input():
    x = rand(2, 10, 2)
    node = helper.make_node("DFT", ["x"], ["y"], axis=1, inverse=1)
    _, (y,) = imported(_model(node, {"x": x}, {}, 17), {"x": x})
    z = _complex(x.astype(np.float64))
    _within_budget(y, _pack(np.fft.ifft(z, axis=1)), 10, np.abs(z).sum(axis=1).max() / 10)


@pytest.mark.parametrize("dft_length", [None, 9])
def test_dft_20_irfft_gives_real_samples(dft_length):
    x = rand(2, 5, 2)
    inputs = ["x", "n" if dft_length else "", "axis"]
    inits = {"axis": np.array(1, np.int64)}
    if dft_length:
        inits["n"] = np.array(dft_length, np.int64)
    node = helper.make_node("DFT", inputs, ["y"], inverse=1, onesided=1)
    _, (y,) = imported(_model(node, {"x": x}, inits, 20), {"x": x})
    z = _complex(x.astype(np.float64))
    n = dft_length or 8
    want = np.fft.irfft(z, n=n, axis=1)[..., None]
    _within_budget(y, want, n, 2 * np.abs(z).sum(axis=1).max() / n)


@pytest.mark.parametrize("with_window", [False, True])
def test_stft_frames_window_and_onesided_bins_match_numpy(with_window):
    signal = rand(2, 64, 1)
    window = np.hanning(16).astype(np.float32)
    if with_window:
        node = helper.make_node("STFT", ["s", "step", "w"], ["y"])
        inits = {"step": np.array(6, np.int64), "w": window}
    else:
        node = helper.make_node("STFT", ["s", "step", "", "len"], ["y"])
        inits = {"step": np.array(6, np.int64), "len": np.array(16, np.int64)}
    graph, (y,) = imported(_model(node, {"s": signal}, inits, 17), {"s": signal})
    x = signal[..., 0].astype(np.float64)
    frames = np.stack([x[:, f * 6:f * 6 + 16] for f in range((64 - 16) // 6 + 1)], axis=1)
    if with_window:
        frames = frames * window
    want = _pack(np.fft.rfft(frames, axis=-1))
    assert y.shape == (2, 9, 9, 2)
    _within_budget(y, want, 16, np.abs(frames).sum(axis=-1).max())
    assert "gather" in ops_of(graph)


def test_hann_window_size_must_be_known_and_matches_numpy():
    node = helper.make_node("HannWindow", ["n"], ["y"], periodic=0)
    graph = helper.make_graph([node, helper.make_node("Add", ["y", "x"], ["z"])], "w",
                              [helper.make_tensor_value_info("x", F32, [7])],
                              [helper.make_tensor_value_info("z", F32, None)],
                              [numpy_helper.from_array(np.array(7, np.int64), "n")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    x = np.zeros(7, np.float32)
    _, (z,) = imported(model, {"x": x})
    np.testing.assert_allclose(z, np.hanning(7), atol=1e-7)
