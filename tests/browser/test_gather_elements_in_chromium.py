"""gatherElements with computed indices in Chromium's WebNN on LiteRT: build() refuses it as it
is ("only supports constant indices"); converted for chromium-litert (the constant_operands
pass makes it a gather) it computes what ONNX Runtime computes on the source model."""
from __future__ import annotations

import numpy as np

from converter.errors import ConverterError
from converter.runtimes.chromium import run_chromium_many
from converter.targets.pipeline import convert_for_target
from tests.importers.onnx.helpers import imported, ort_outputs
from tests.passes.test_gather_elements_indices import _onnx_gather_elements


def test_computed_gather_elements_indices_run_once_converted_for_the_backend(browser_limits):
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((1, 3, 20)).astype(np.float32),
             "i": rng.integers(-20, 20, (1, 3, 12)).astype(np.int64)}
    model = _onnx_gather_elements([1, 3, 20], [1, 3, 12], 2)
    as_imported, _ = imported(model, feeds)
    converted, _ = imported(model, feeds)
    assert convert_for_target(converted, "chromium-litert").passed
    refused, ran = run_chromium_many([(as_imported, feeds), (converted, feeds)])
    assert isinstance(refused, ConverterError) and "constant indices" in refused.line()
    [want] = ort_outputs(model, feeds)
    np.testing.assert_array_equal(ran["y"], want)
