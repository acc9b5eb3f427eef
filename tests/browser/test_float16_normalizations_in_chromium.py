"""transformers.js's fp16 files in the browser: float16 layer, skip-layer, instance and group
normalizations with BERT's epsilon 1e-12 (0 in float16) over a constant row, channel or group
(variance 0). The graph computes their statistics in float32, as ONNX Runtime does, so
Chromium's WebNN gives the bias there, finite, where float16 statistics would divide 0 by 0;
every output within the float16 bounds of ONNX Runtime and near numpy's float64 value.
Fixtures: tests/verification/test_dtype_forms.py's one-node models."""
from __future__ import annotations

import numpy as np
import pytest

from converter.importers.onnx import import_onnx
from converter.runtimes.chromium import run_chromium
from converter.verification.core import verify
from tests.verification.test_dtype_forms import _norm_model

CASES = [("LayerNormalization", [2, 3, 16], (2,)),
         ("SkipLayerNormalization", [2, 3, 16], (2,)),
         ("InstanceNormalization", [1, 4, 3, 5], (2, 3)),
         ("GroupNormalization", [1, 4, 6], None)]


def _float64(op, x, scale, bias, axes):
    """numpy in float64, epsilon 1e-12 as given."""
    x64 = x.astype(np.float64)
    if op == "GroupNormalization":  # 2 groups of 2 channels, scale and bias per group
        groups = x64.reshape(1, 2, -1)
        centered = groups - groups.mean(axis=2, keepdims=True)
        normalized = centered / np.sqrt((centered ** 2).mean(axis=2, keepdims=True) + 1e-12)
        return (normalized * scale.reshape(1, 2, 1) + bias.reshape(1, 2, 1)).reshape(x.shape)
    centered = x64 - x64.mean(axis=axes, keepdims=True)
    normalized = centered / np.sqrt((centered ** 2).mean(axis=axes, keepdims=True) + 1e-12)
    along = [1] * x.ndim
    along[-1 if op.endswith("LayerNormalization") else 1] = -1
    return normalized * scale.reshape(along) + bias.reshape(along)


@pytest.mark.parametrize("op, shape, axes", CASES)
def test_a_float16_normalization_keeps_the_epsilon_in_chromium(browser_limits, tmp_path, op,
                                                               shape, axes):
    path = tmp_path / "n.onnx"
    scale, bias = _norm_model(path, op, shape, opset=18)
    x = np.random.default_rng(1).random(shape).astype(np.float16)
    if op == "GroupNormalization":
        x[0, :2] = 0.5  # the first group: variance 0
    elif op == "InstanceNormalization":
        x[0, 1] = 0.25  # one channel: variance 0
    else:
        x[0, 0] = 0.5  # one row: variance 0
    report = verify(path, feeds={"x": x}, runtime="chromium", oracle="always")
    (y,) = report.outputs
    assert report.graph_runtime == "chromium"
    assert y.extra["webnnVsF64"] <= 4e-3, str(report)  # a float16 rounding or two
    # ORT's float16 InstanceNormalization is 16 float16 ULPs off the math on a channel of
    # variance 0 (tests/verification/test_dtype_forms.py): the verdict there is ORT's to lose
    if op != "InstanceNormalization":
        assert report.passed, str(report)
    got = run_chromium(import_onnx(path), {"x": x})["y"]  # the browser's own numbers
    assert got.dtype == np.float16 and np.isfinite(got).all()
    np.testing.assert_allclose(got.astype(np.float64), _float64(op, x, scale, bias, axes),
                               atol=4e-3, rtol=4e-3)
