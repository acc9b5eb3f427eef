"""The TFLite importer's compositions for ops WebNN lacks (issue 17: RFFT2D as DFT matmuls,
MediaPipe's custom ops by gather/where/argMax) run in Chromium's WebNN as they do on ONNX
Runtime: the same numpy references and budgets as tests/importers/tflite, in one browser batch."""
from __future__ import annotations

import numpy as np

from converter.zoo.fetch import fetch_model
from converter.importers.tflite import import_tflite
from converter.verification.parity import compare
from converter.runtimes.chromium import run_chromium, run_chromium_many
from converter.targets.pipeline import convert_for_target
from tests.importers.tflite import mediapipe_reference as ref
from tests.importers.tflite import test_mediapipe_attention_model as attention
from tests.importers.tflite import test_mediapipe as mp
from tests.importers.tflite import test_spectral as spectral


def test_spectral_and_mediapipe_compositions_in_chromium(browser_limits):
    rng = np.random.default_rng(17)
    signal = rng.uniform(-1, 1, (2, 6, 8)).astype(np.float32)
    pooled_source = rng.integers(-3, 9, (2, 7, 5, 2)).astype(np.float32)  # ties on purpose
    unpool_source = rng.uniform(-1, 1, (2, 6, 9, 3)).astype(np.float32)
    values, indices = ref.max_pool_argmax(unpool_source, mp.VALID, (2, 2), (2, 2))
    landmarks = rng.uniform(10, 50, (1, 12, 3)).astype(np.float32)
    features = rng.uniform(0, 1, (1, 12, 16, 3)).astype(np.float32)
    matrix = mp._affine(0.4, (1.3, 1.1), (5.2, -1.7))
    cases = [
        (spectral._rfft2d_model([2, 6, 8], [8, 8]), {"x": signal}),
        (mp._argmax_model([2, 7, 5, 2], mp.SAME, (2, 2), (3, 3)), {"x": pooled_source}),
        (mp._unpool_model(list(values.shape), (2, 2), (2, 2)),
         {"x": values, "indices": indices}),
        (mp._matrix_model(mp._L2TM), {"landmarks": landmarks}),
        (mp._bilinear_model("CUSTOM:TransformTensorBilinear", [1, 12, 16, 3], (9, 11), {}),
         {"data": features, "matrix": matrix}),
    ]
    results = run_chromium_many([(import_tflite(model), feeds) for model, feeds in cases])
    for result in results:
        assert isinstance(result, dict), result.line()
    fft, argmax, unpooled, transform, crop = results

    want = np.fft.rfft2(signal.astype(np.float64), s=(8, 8))
    bound = spectral._budget(6, 8, 8, np.abs(want).max()).atol
    for name, reference in (("re", want.real), ("im", want.imag), ("abs", np.abs(want))):
        assert np.abs(fft[name] - reference).max() <= bound, name

    want_values, want_indices = ref.max_pool_argmax(pooled_source, mp.SAME, (2, 2), (3, 3))
    np.testing.assert_array_equal(argmax["values"], want_values)
    np.testing.assert_array_equal(argmax["indices"], want_indices)
    np.testing.assert_array_equal(unpooled["y"],
                                  ref.max_unpooling(values, indices, (2, 2), (2, 2)))

    want_matrix = mp._reference_matrix(landmarks, mp._L2TM)
    assert mp._ulps(transform["matrix"][0, :2, :2], want_matrix[0, :2, :2],
                    np.abs(want_matrix[0, :2, :2]).max()) <= 16
    assert mp._ulps(transform["matrix"][0, :2, 3], want_matrix[0, :2, 3],
                    np.abs(want_matrix[0, :2, 3]).max()) <= 16
    assert mp._ulps(crop["crop"], ref.transform_tensor_bilinear(features, matrix, (9, 11), 2),
                    1.0) <= 8


def test_face_landmark_with_attention_for_chromium_litert_runs_in_chromium(browser_limits):
    """The real model (see tests/importers/tflite/test_mediapipe_attention_model.py), rewritten
    for the chromium-litert target, in the browser against LiteRT plus MediaPipe's kernels."""
    path = fetch_model(attention.SOURCE)
    graph = import_tflite(path)
    rng = np.random.default_rng(0)
    feeds = {name: rng.random(x.shape, dtype=np.float64).astype(np.float32)
             for name, x in graph.inputs.items()}
    want = attention._reference(path.read_bytes(), feeds)
    report = convert_for_target(graph, "chromium-litert")
    assert report.transposes_after == 0
    got = run_chromium(graph, feeds)
    for name, expected in want.items():
        result = compare(name, got[name], expected)
        assert result.passed, result.to_json()
