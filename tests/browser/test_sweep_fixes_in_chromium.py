"""What tools/vision_sweep.py found Chromium 153's WebNN on LiteRT refusing, in the browser:
  * gatherElements with computed indices (a grid_sample): build() refuses it as it is ("only
    supports constant indices"); converted for chromium-litert (the constant_operands pass
    makes it a gather) it computes what ONNX Runtime computes on the source model;
  * int8 pad and maxPool2d (a statically quantized TFLite model): not listed for int8;
    converted for chromium-litert (int8_in_float) they give numpy's values exactly."""
from __future__ import annotations

import numpy as np

from converter.errors import ConverterError
from converter.runtimes.chromium import run_chromium_many
from converter.targets.pipeline import convert_for_target
from tests.importers.onnx.helpers import imported, ort_outputs
from tests.passes.test_gather_elements_indices import _onnx_gather_elements
from tests.passes.test_int8_in_float_unlisted import _want, pad_pool_graph


def test_sweep_findings_run_once_converted_for_the_backend(browser_limits):
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((1, 3, 20)).astype(np.float32),
             "i": rng.integers(-20, 20, (1, 3, 12)).astype(np.int64)}
    model = _onnx_gather_elements([1, 3, 20], [1, 3, 12], 2)
    as_imported, _ = imported(model, feeds)
    converted, _ = imported(model, feeds)
    assert convert_for_target(converted, "chromium-litert").passed
    quantized = {"x": rng.integers(-128, 128, (1, 2, 5, 5)).astype(np.int8)}
    pooled = pad_pool_graph(mode="reflection")
    assert convert_for_target(pooled, "chromium-litert").passed
    refused, ran, pooled_out = run_chromium_many([(as_imported, feeds), (converted, feeds),
                                                  (pooled, quantized)])
    assert isinstance(refused, ConverterError) and "constant indices" in refused.line()
    [want] = ort_outputs(model, feeds)
    np.testing.assert_array_equal(ran["y"], want)
    assert pooled_out["y"].dtype == np.int8
    np.testing.assert_array_equal(pooled_out["y"], _want(quantized["x"], "reflection"))
