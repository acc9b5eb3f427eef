"""MediaPipe's TFLite custom ops (issue 17), imported by composition and checked against numpy
versions of MediaPipe's own kernels (mediapipe_reference.py, which cites the source files and
commits): LiteRT has no kernels for them, so it cannot be the oracle here."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.tflite import import_tflite
from converter.testing.tflite_fixtures import RELU6, TfliteBuilder, flexbuffer_map, pool_params

from . import helpers  # helpers.RNG is reseeded for every test
from . import mediapipe_reference as ref
from .helpers import ops_of, refused

SAME, VALID = 1, 2  # TfLitePadding in MediaPipe's pool params


def _ours(model: bytes, feeds: dict) -> dict:
    return run(import_tflite(model), feeds)


def _ulps(got: np.ndarray, want: np.ndarray, scale: float) -> float:
    """The largest difference in float32 ULPs of `scale` (the magnitude the results share)."""
    return float(np.abs(got.astype(np.float64) - want).max() / np.spacing(np.float32(scale)))


# -- MaxPoolingWithArgmax2D / MaxUnpooling2D ---------------------------------------------------
def _argmax_model(shape, padding, strides, window, activation=0):
    b = TfliteBuilder()
    x = b.input("x", shape)
    out_shape = [shape[0], *(
        (n + s - 1) // s if padding == SAME else (n - f + s) // s
        for n, s, f in zip(shape[1:3], strides, window)), shape[3]]
    y, i = b.tensor("values", out_shape), b.tensor("indices", out_shape)
    b.op("CUSTOM:MaxPoolingWithArgmax2D", [x], [y, i],
         custom_options=pool_params(padding, strides[1], strides[0], window[1], window[0],
                                    activation))
    return b.build([y, i])


@pytest.mark.parametrize("shape, padding, strides, window, activation", [
    ([1, 6, 8, 3], VALID, (2, 2), (2, 2), 0),
    ([2, 7, 5, 2], SAME, (2, 2), (3, 3), 0),  # padding on every side, partial windows
    ([1, 5, 6, 4], SAME, (1, 2), (2, 3), RELU6),
])
def test_max_pooling_with_argmax_matches_the_kernel_bit_for_bit(shape, padding, strides, window,
                                                                 activation):
    # Small integers make ties: the kernel keeps the first maximum of the window.
    x = helpers.RNG.integers(-3, 9, shape).astype(np.float32)
    got = _ours(_argmax_model(shape, padding, strides, window, activation), {"x": x})
    clamp = (0.0, 6.0) if activation == RELU6 else None
    want_values, want_indices = ref.max_pool_argmax(x, padding, strides, window, clamp)
    np.testing.assert_array_equal(got["values"], want_values)
    np.testing.assert_array_equal(got["indices"], want_indices)
    assert (want_indices % 1 > 0.09).all()  # the kernel's +0.1


def _unpool_model(shape, strides, window):
    b = TfliteBuilder()
    x, i = b.input("x", shape), b.input("indices", shape)
    y = b.tensor("y", [shape[0], shape[1] * window[0], shape[2] * window[1], shape[3]])
    b.op("CUSTOM:MaxUnpooling2D", [x, i], [y],
         custom_options=pool_params(SAME, strides[1], strides[0], window[1], window[0]))
    return b.build([y])


@pytest.mark.parametrize("window", [(2, 2), (2, 3)])
def test_max_unpooling_puts_each_value_back_where_the_argmax_found_it(window):
    source = helpers.RNG.uniform(-1, 1, (2, 6, 9, 3)).astype(np.float32)
    values, indices = ref.max_pool_argmax(source, VALID, window, window)
    got = _ours(_unpool_model(list(values.shape), window, window),
                {"x": values, "indices": indices})["y"]
    np.testing.assert_array_equal(got, ref.max_unpooling(values, indices, window, window))
    # every kept value is the source's at that place
    kept = got != 0
    np.testing.assert_array_equal(got[kept], source[:, :got.shape[1], :got.shape[2]][kept])


def test_max_unpooling_truncates_indices_as_the_kernel_does():
    values = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 2, 2)
    indices = np.array([0.1, 3.9, 2.5, 1.0, -0.7, 0.99, 3.0, 2.2],
                       np.float32).reshape(1, 2, 2, 2)
    got = _ours(_unpool_model([1, 2, 2, 2], (2, 2), (2, 2)),
                {"x": values, "indices": indices})["y"]
    np.testing.assert_array_equal(got, ref.max_unpooling(values, indices, (2, 2), (2, 2)))


def test_max_unpooling_with_overlapping_windows_is_refused():
    message = str(refused(_unpool_model([1, 3, 3, 1], (1, 1), (2, 2))))
    assert "its strides [1, 1] differ from its filter size [2, 2]" in message


def test_pool_params_too_short_are_refused():
    b = TfliteBuilder()
    x = b.input("x", [1, 4, 4, 1])
    y, i = b.tensor("values", [1, 2, 2, 1]), b.tensor("indices", [1, 2, 2, 1])
    b.op("CUSTOM:MaxPoolingWithArgmax2D", [x], [y, i], custom_options=b"\x01\x00\x00\x00")
    assert "its custom options have 4 bytes; a TfLitePoolParams needs 24" \
        in str(refused(b.build([y, i])))


# -- Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks ---------------------
# As in MediaPipe's face landmark model with attention: a matrix from 2-D landmarks, a crop of a
# feature map through it, and landmarks mapped back.
_L2TM = dict(subset_idxs=[0, 3, 5, 7, 2, 9, 11], left_rotation_idx=3, right_rotation_idx=7,
             target_rotation_radians=0.0, output_height=8, output_width=10, scale_x=1.5,
             scale_y=1.25)


def _landmarks(count=12, spread=40.0, centre=(30.0, 20.0)):
    pts = helpers.RNG.uniform(-spread / 2, spread / 2, (1, count, 3)).astype(np.float32)
    pts[..., 0] += centre[0]
    pts[..., 1] += centre[1]
    return pts


def _matrix_model(options, count=12, version=2):
    b = TfliteBuilder()
    x = b.input("landmarks", [1, count, 3])
    m = b.tensor("matrix", [1, 4, 4])
    b.op("CUSTOM:Landmarks2TransformMatrix", [x], [m], custom_options=flexbuffer_map(options),
         version=version)
    return b.build([m])


def _reference_matrix(landmarks, o):
    return ref.landmarks_to_transform_matrix_v2(
        landmarks, o["subset_idxs"], o["left_rotation_idx"], o["right_rotation_idx"],
        o["target_rotation_radians"], o["output_height"], o["output_width"], o["scale_x"],
        o["scale_y"])


@pytest.mark.parametrize("target", [0.0, 0.7, -2.5])
def test_landmarks_to_transform_matrix_matches_the_kernel(target):
    options = dict(_L2TM, target_rotation_radians=target)
    landmarks = _landmarks()
    got = _ours(_matrix_model(options), {"landmarks": landmarks})["matrix"]
    want = _reference_matrix(landmarks, options)
    np.testing.assert_array_equal(got[0, 2:], [[0, 0, 1, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(got[0, :2, 2], [0, 0])
    # The kernel's cosf(target - atan2f(...)) against cos/sin from the unit vector: float32
    # rounding of a handful of operations on each entry. Linear part and translation are
    # judged at their own scales.
    assert _ulps(got[0, :2, :2], want[0, :2, :2], np.abs(want[0, :2, :2]).max()) <= 16
    assert _ulps(got[0, :2, 3], want[0, :2, 3], np.abs(want[0, :2, 3]).max()) <= 16


def test_landmarks_to_transform_matrix_by_hand_for_a_box_turned_half_round():
    """Numbers by hand. Rotation landmarks 2 (18, 7) and 0 (10, 7) lie on a horizontal line
    pointing left: atan2(0, -8) = pi, target 0, so r = -pi (cos -1, sin 0) and the subset's
    points are read as (-x, -y). Points (10, 7), (30, 13), (18, 7), (25, 9): the turned box
    is x in [-30, -10], y in [-13, -7], 20 x 6, centre (-20, -10), turned back (20, 10).
    Output 10 x 8 with scale 1.5, 1.25: sx = 1.5 * 20 / 10 = 3, sy = 1.25 * 6 / 8 = 0.9375.
    Matrix rows: (-sx, 0, 0, 20 + 5 sx) and (0, -sy, 0, 10 + 4 sy)."""
    landmarks = np.zeros((1, 4, 3), np.float32)
    landmarks[0, :, :2] = [[10, 7], [30, 13], [18, 7], [25, 9]]
    options = dict(_L2TM, subset_idxs=[0, 1, 2, 3], left_rotation_idx=2, right_rotation_idx=0)
    got = _ours(_matrix_model(options, count=4), {"landmarks": landmarks})["matrix"]
    sx, sy = 3.0, 0.9375
    want = [[-sx, 0, 0, 20 + 5 * sx], [0, -sy, 0, 10 + 4 * sy], [0, 0, 1, 0], [0, 0, 0, 1]]
    # float32 sin(-pi) is -8.7e-8, not 0: entries that should be 0 are that small.
    np.testing.assert_allclose(got[0], want, rtol=0, atol=4e-6)
    np.testing.assert_allclose(got[0], _reference_matrix(landmarks, options)[0], rtol=0,
                               atol=4e-6)


def test_landmarks_to_transform_matrix_of_coinciding_rotation_landmarks_is_unrotated():
    landmarks = _landmarks()
    landmarks[0, 7] = landmarks[0, 3]  # atan2(0, 0) = 0
    got = _ours(_matrix_model(_L2TM), {"landmarks": landmarks})["matrix"]
    want = _reference_matrix(landmarks, _L2TM)
    assert got[0, 0, 1] == 0 and got[0, 1, 0] == 0
    assert _ulps(got, want, np.abs(want).max()) <= 16


_L2TM_V1 = dict(subset=[0, 3, 5, 7, 2, 9, 11], left_rotation_idx=3, right_rotation_idx=7,
                input_hw=[64, 80], output_hw=[16, 20], dimensions=3, landmarks_range=64,
                bbox_size_multiplier=1.25)


def _matrix_model_v1(options, count=12):
    b = TfliteBuilder()
    x = b.input("landmarks", [1, 1, 1, 3 * count])
    m = b.tensor("matrix", [1, 4, 4])
    b.op("CUSTOM:Landmarks2TransformMatrix", [x], [m], custom_options=flexbuffer_map(options),
         version=1)
    return b.build([m])


@pytest.mark.parametrize("vertical", [False, True])
def test_landmarks_to_transform_matrix_version_1_matches_the_kernel(vertical):
    landmarks = _landmarks().reshape(1, 1, 1, 36)
    if vertical:  # dx = 0: atan(+-inf)
        landmarks[0, 0, 0, 3 * 7] = landmarks[0, 0, 0, 3 * 3]
    o = _L2TM_V1
    got = _ours(_matrix_model_v1(o), {"landmarks": landmarks})["matrix"]
    want = ref.landmarks_to_transform_matrix_v1(
        landmarks, o["subset"], o["left_rotation_idx"], o["right_rotation_idx"], o["input_hw"],
        o["output_hw"], o["landmarks_range"], o["bbox_size_multiplier"])
    np.testing.assert_array_equal(got[0, 2:], [[0, 0, 1, 0], [0, 0, 0, 1]])
    assert _ulps(got[0, :2, :2], want[0, :2, :2], np.abs(want[0, :2, :2]).max()) <= 16
    assert _ulps(got[0, :2, 3], want[0, :2, 3], np.abs(want[0, :2, 3]).max()) <= 16


def test_landmarks_to_transform_matrix_refuses_what_the_kernel_does_not_do():
    assert "version 3 of the op; the kernel has versions 1 and 2" in str(refused(
        _matrix_model(_L2TM, version=3)))
    assert "dimensions 2" in str(refused(_matrix_model_v1(dict(_L2TM_V1, dimensions=2))))
    assert "its custom options have no 'scale_y'" in str(refused(
        _matrix_model({k: v for k, v in _L2TM.items() if k != "scale_y"})))
    assert "its landmark indices [12] are outside the 12 landmarks" in str(refused(
        _matrix_model(dict(_L2TM, right_rotation_idx=12))))


def _bilinear_model(code, data_shape, out_hw, options):
    b = TfliteBuilder()
    x = b.input("data", data_shape)
    m = b.input("matrix", [1, 4, 4])
    y = b.tensor("crop", [1, *out_hw, data_shape[3]])
    b.op(code, [x, m], [y], custom_options=flexbuffer_map(options),
         version=2 if code == "CUSTOM:TransformTensorBilinear" else 1)
    return b.build([y])


def _affine(angle, scale, shift):
    c, s = np.cos(angle), np.sin(angle)
    m = np.eye(4, dtype=np.float32)
    m[0, :2], m[1, :2] = [c * scale[0], -s * scale[1]], [s * scale[0], c * scale[1]]
    m[0, 3], m[1, 3] = shift
    return m.reshape(1, 4, 4)


@pytest.mark.parametrize("code, version, options", [
    ("CUSTOM:TransformTensorBilinear", 2, {"output_height": 9, "output_width": 11}),
    ("CUSTOM:TransformTensor", 1, {"mode": "bilinear", "output_size": [9, 11]}),
])
def test_transform_tensor_bilinear_matches_the_kernel(code, version, options):
    data = helpers.RNG.uniform(0, 1, (1, 12, 16, 3)).astype(np.float32)
    matrix = _affine(0.4, (1.3, 1.1), (5.2, -1.7))
    got = _ours(_bilinear_model(code, [1, 12, 16, 3], (9, 11), options),
                {"data": data, "matrix": matrix})["crop"]
    want = ref.transform_tensor_bilinear(data, matrix, (9, 11), version)
    # Some output pixels fall outside the input (zeros) and some inside: both are exercised.
    assert (want == 0).all(axis=-1).any() and (want != 0).all(axis=-1).any()
    inside = (want != 0).all(axis=-1)
    np.testing.assert_array_equal(got[~inside], 0)
    # float32 blending against the kernel's mixed float/double: a few ULPs of the data's 1.0
    # (measured: half of one).
    assert _ulps(got, want, 1.0) <= 8


def test_transform_tensor_bilinear_on_exact_coordinates_reaches_the_last_row_and_column():
    """A dyadic matrix makes every coordinate exact: the edges x = W - 1 and y = H - 1 are
    inside, where the neighbour beyond reads as zero with weight 0."""
    data = helpers.RNG.uniform(-1, 1, (1, 5, 7, 2)).astype(np.float32)
    matrix = _affine(0.0, (0.75, 0.5), (0.0, 0.0))  # x = 0.75 ox, y = 0.5 oy (version 1)
    got = _ours(_bilinear_model("CUSTOM:TransformTensor", [1, 5, 7, 2], (10, 9), {}),
                {"data": data, "matrix": matrix})["crop"]
    want = ref.transform_tensor_bilinear(data, matrix, (10, 9), 1)
    np.testing.assert_array_equal(got[0, 8, 8], data[0, 4, 6])  # (6, 4): the last pixel
    np.testing.assert_array_equal(got[0, 9], 0)  # y = 4.5 is past the last row
    assert _ulps(got, want, 1.0) <= 4


@pytest.mark.parametrize("version, shape, options", [
    (2, [1, 20, 3], {}),
    (2, [1, 20, 2], {}),
    (1, [1, 1, 1, 60], {"dimensions": 3, "scale": 2.0}),
    (1, [1, 2, 3, 8], {"dimensions": 2, "scale": 0.5}),
])
def test_transform_landmarks_matches_the_kernel(version, shape, options):
    landmarks = helpers.RNG.uniform(0, 64, shape).astype(np.float32)
    matrix = _affine(-0.3, (0.8, 1.2), (12.5, -7.25))
    b = TfliteBuilder()
    x, m = b.input("landmarks", shape), b.input("matrix", [1, 4, 4])
    y = b.tensor("moved", shape)
    b.op("CUSTOM:TransformLandmarks", [x, m], [y], custom_options=flexbuffer_map(options),
         version=version)
    got = _ours(b.build([y]), {"landmarks": landmarks, "matrix": matrix})["moved"]
    want = ref.transform_landmarks(landmarks, matrix, version, options.get("dimensions"),
                                   options.get("scale", 1.0))
    if shape[-1] % 3 == 0 and options.get("dimensions", 3) == 3:
        np.testing.assert_array_equal(got.reshape(-1, 3)[:, 2], landmarks.reshape(-1, 3)[:, 2])
    # the same float32 products and sums in the same order as the kernel
    np.testing.assert_array_equal(got, want)


def test_face_attention_chain_landmarks_to_matrix_to_crop_and_back():
    """Landmarks2TransformMatrix feeding TransformTensorBilinear and TransformLandmarks, the
    way the face landmark model with attention wires them, against the kernels chained."""
    b = TfliteBuilder()
    points = b.input("landmarks", [1, 12, 3])
    features = b.input("features", [1, 48, 64, 4])
    matrix = b.tensor("matrix", [1, 4, 4])
    b.op("CUSTOM:Landmarks2TransformMatrix", [points], [matrix],
         custom_options=flexbuffer_map(_L2TM), version=2)
    crop = b.tensor("crop", [1, 8, 10, 4])
    b.op("CUSTOM:TransformTensorBilinear", [features, matrix], [crop],
         custom_options=flexbuffer_map({"output_height": 8, "output_width": 10}), version=2)
    local = b.input("local", [1, 5, 3])
    moved = b.tensor("moved", [1, 5, 3])
    b.op("CUSTOM:TransformLandmarks", [local, matrix], [moved], version=2)
    landmarks = _landmarks(spread=30.0, centre=(32.0, 24.0))
    feats = helpers.RNG.uniform(0, 1, (1, 48, 64, 4)).astype(np.float32)
    local_points = helpers.RNG.uniform(0, 10, (1, 5, 3)).astype(np.float32)
    graph = import_tflite(b.build([crop, moved]))
    got = run(graph, {"landmarks": landmarks, "features": feats, "local": local_points})
    m = _reference_matrix(landmarks, _L2TM)
    want_crop = ref.transform_tensor_bilinear(feats, m, (8, 10), 2)
    want_moved = ref.transform_landmarks(local_points, m, 2)
    assert _ulps(got["moved"], want_moved, np.abs(want_moved).max()) <= 32
    assert np.abs(got["crop"] - want_crop).max() <= 1e-4  # the whole-model float32 budget
    assert (want_crop != 0).any()
    assert not any(op.startswith("CUSTOM") for op in ops_of(graph))


def _fuzzed(good: bytes, rng: np.random.Generator, trial: int) -> bytes:
    """Random bytes, a truncated good buffer, or a good buffer with three bytes changed."""
    if trial % 3 == 0:
        return bytes(rng.integers(0, 256, int(rng.integers(1, 80)), dtype=np.uint8))
    if trial % 3 == 1:
        return good[:int(rng.integers(1, len(good)))]
    damaged = bytearray(good)
    for _ in range(3):
        damaged[int(rng.integers(0, len(damaged)))] = int(rng.integers(0, 256))
    return bytes(damaged)


@pytest.mark.parametrize("code, version, shape, options", [
    ("CUSTOM:Landmarks2TransformMatrix", 2, [1, 12, 3], _L2TM),
    ("CUSTOM:TransformLandmarks", 1, [1, 1, 4, 6], {"dimensions": 3, "scale": 2.0}),
    ("CUSTOM:TransformTensor", 1, [1, 4, 4, 2], {"mode": "bilinear", "output_size": [3, 3]}),
])
def test_damaged_custom_options_are_refused_in_one_line(code, version, shape, options):
    """Model files are hostile: whatever the flexbuffer holds, the import either succeeds or
    says why it cannot, never raising anything else."""
    good = flexbuffer_map(options)
    outcomes = set()
    for trial in range(60):
        b = TfliteBuilder()
        inputs = [b.input("x", shape)]
        if code != "CUSTOM:Landmarks2TransformMatrix":
            inputs.append(b.input("matrix", [1, 4, 4]))
        out_shape = [1, 4, 4] if code == "CUSTOM:Landmarks2TransformMatrix" else \
            ([1, 3, 3, 2] if code == "CUSTOM:TransformTensor" else shape)
        y = b.tensor("y", out_shape)
        b.op(code, inputs, [y], custom_options=_fuzzed(good, helpers.RNG, trial),
             version=version)
        try:
            import_tflite(b.build([y]))
            outcomes.add("imported")
        except UnsupportedError as e:
            assert "\n" not in e.line()
            outcomes.add("refused")
    assert "refused" in outcomes


def test_sizes_that_would_build_huge_constants_or_graphs_are_refused():
    """Model files are hostile: what the options or tensors ask for is bounded before it is
    built."""
    b = TfliteBuilder()
    x = b.input("x", [1, 64, 64, 1])
    y, i = b.tensor("values", [1, 64, 64, 1]), b.tensor("indices", [1, 64, 64, 1])
    b.op("CUSTOM:MaxPoolingWithArgmax2D", [x], [y, i],
         custom_options=pool_params(SAME, 1, 1, 64, 64))
    assert "its 64x64 window has more than 1024 positions" in str(refused(b.build([y, i])))
    message = str(refused(_bilinear_model("CUSTOM:TransformTensorBilinear", [1, 4, 4, 1],
                                          (8192, 4096), {})))
    assert "its output has 33554432 pixels; the sampling grid is built for up to 2^24" \
        in message
