"""Tiny TFLite files whose constant values or declared shapes size what the importer computes
(a range, a tile, a one-hot table, a diagonal mask, resize tables): each is counted against
the memory budget (converter.budget) before it is made, and refused with one clear line past
it. Below the limit each still converts, checked against LiteRT or numpy."""
from __future__ import annotations

import numpy as np
import pytest

from converter.budget import limits
from converter.errors import ConverterError, UnsupportedError
from converter.runtimes.execute import run
from converter.importers.tflite import import_tflite
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import Const, Input, Output, TfliteBuilder, one_op, \
    sparse_parameters

from .bounded import address_space_bounded  # noqa: F401  (the fixture, used by every test)

pytestmark = pytest.mark.usefixtures("address_space_bounded")

BIG = 2 ** 31 - 1


def _i32(v):
    return Const(np.array(v, np.int32))


def _import(model: bytes, max_tensor_bytes=None):
    with limits(max_tensor_bytes=max_tensor_bytes):
        return import_tflite(model)


def _refused_past(model: bytes, message: str, max_tensor_bytes=None) -> None:
    with pytest.raises(ConverterError) as e:
        _import(model, max_tensor_bytes)
    assert message in str(e.value), str(e.value)


def _agrees_with_litert(model: bytes, feeds: dict, max_tensor_bytes: int) -> dict:
    ours = run(_import(model, max_tensor_bytes), feeds)
    want = run_litert(model, feeds)
    for name, value in want.items():
        np.testing.assert_array_equal(ours[name], value)
    return ours


# -- RANGE ----------------------------------------------------------------------------------
def _range(limit, start=0, delta=1):
    return one_op("RANGE", [_i32(start), _i32(limit), _i32(delta)],
                  [Output("y", [1], "int32")])


def test_a_range_of_billions_is_refused_before_it_is_made():
    # Was: numpy asked for 16 GiB (5 s and a bare "Unable to allocate" for 2**29 elements).
    _refused_past(_range(BIG), "computing RANGE (op 0) at conversion time would allocate "
                               "16.0 GiB, over the per-tensor limit of 1.0 GiB")


@pytest.mark.parametrize("limit, fits", [(80, True), (79, False)])
def test_range_claims_its_values_first(limit, fits):
    model = one_op("RANGE", [_i32(2), _i32(32), _i32(3)], [Output("y", [10], "int32")])
    if not fits:
        _refused_past(model, "would allocate 80 bytes", limit)
        return
    np.testing.assert_array_equal(run(_import(model, limit), {})["y"],
                                  np.arange(2, 32, 3))


@pytest.mark.parametrize("bounds", [(0.0, np.inf, 1.0), (0.0, 1.0, np.nan)])
def test_a_range_bound_that_is_not_finite_is_refused(bounds):
    # Was: internal error: ValueError: Maximum allowed size exceeded.
    model = one_op("RANGE", [Const(np.array(v, np.float32)) for v in bounds],
                   [Output("y", [1])])
    with pytest.raises(UnsupportedError, match="has a bound that is not finite"):
        _import(model)


# -- FILL, BROADCAST_TO, TILE ------------------------------------------------------------------
def test_fill_dimensions_past_the_spec_are_refused_before_numpy_sees_them():
    # Was: internal error: ValueError: array is too big.
    model = one_op("FILL", [_i32([BIG, BIG]), Const(np.array(1.0, np.float32))],
                   [Output("y", [1])])
    with pytest.raises(UnsupportedError, match=r"its dimensions \[2147483647, 2147483647\] are "
                                               r"not a WebNN shape: shape \[2147483647, "
                                               r"2147483647\] has 4611686014132420609 elements"):
        _import(model)


def _broadcast(value, shape):
    return one_op("BROADCAST_TO", [Const(np.asarray(value, np.float32)), _i32(shape)],
                  [Output("y", shape)])


def test_a_broadcast_of_one_number_stays_one_number():
    # Was: 16 s, copying out 3 GiB of ones to find that they are all the same.
    graph = _import(_broadcast([[1.0, 1.0, 1.0]], [2 ** 28, 3]))
    (constant,) = graph.constants.values()
    assert constant.constant.fill == 1.0 and list(constant.shape) == [2 ** 28, 3]


def test_a_broadcast_past_the_spec_is_refused_before_numpy_sees_it():
    with pytest.raises(UnsupportedError, match=r"its shape \[2147483647, 2147483647, 3\] is not "
                                               r"a WebNN shape"):
        _import(_broadcast([[1.0, 2.0, 3.0]], [BIG, BIG, 3]))


@pytest.mark.parametrize("limit, fits", [(48, True), (47, False)])
def test_a_broadcast_of_distinct_values_claims_what_it_writes_out(limit, fits):
    model = _broadcast([[1.0, 2.0, 3.0]], [4, 3])
    if not fits:
        _refused_past(model, "computing the value 'y' at conversion time would allocate "
                             "48 bytes", limit)
        return
    np.testing.assert_array_equal(run(_import(model, limit), {})["y"],
                                  np.tile([1, 2, 3], (4, 1)))


def _tile(reps):
    return one_op("TILE", [Const(np.arange(4, dtype=np.float32).reshape(2, 2)), _i32(reps)],
                  [Output("y", [2 * reps[0], 2 * reps[1]])])


def test_a_tile_of_a_constant_is_claimed_before_it_is_made():
    _refused_past(_tile([2 ** 29, 2]), "computing TILE (op 0) at conversion time would "
                                       "allocate 16.0 GiB")


@pytest.mark.parametrize("limit, fits", [(96, True), (95, False)])
def test_tile_claims_its_result(limit, fits):
    if not fits:
        _refused_past(_tile([3, 2]), "would allocate 96 bytes", limit)
        return
    np.testing.assert_array_equal(run(_import(_tile([3, 2]), limit), {})["y"],
                                  np.tile(np.arange(4).reshape(2, 2), (3, 2)))


# -- ONE_HOT, MATRIX_DIAG, resize tables, LRN band, DENSIFY ---------------------------------
def _one_hot(depth):
    return one_op("ONE_HOT", [Input("i", [3], "int32"), _i32(depth),
                              Const(np.array(1, np.float32)), Const(np.array(0, np.float32))],
                  [Output("y", [3, depth])], axis=-1)


def test_one_hot_depth_is_claimed_before_its_positions_are_made():
    # Was: numpy asked for 8 GiB, and its bare "Unable to allocate" was the error.
    _refused_past(_one_hot(BIG), "computing ONE_HOT (op 0) at conversion time would allocate "
                                 "16.0 GiB")


@pytest.mark.parametrize("limit, fits", [(40, True), (39, False)])
def test_one_hot_agrees_with_litert_within_its_claim(limit, fits):
    if not fits:
        _refused_past(_one_hot(5), "would allocate 40 bytes", limit)
        return
    got = _agrees_with_litert(_one_hot(5), {"i": np.array([0, 4, 7], np.int32)}, limit)
    np.testing.assert_array_equal(got["y"], [[1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0] * 5])


def test_matrix_diag_of_a_long_axis_is_claimed_before_its_mask():
    # Was: 12 s building a 65536 x 65536 mask, then refused as too big a constant.
    model = one_op("MATRIX_DIAG", [Input("d", [2 ** 16])], [Output("y", [2 ** 16, 2 ** 16])])
    _refused_past(model, "computing MATRIX_DIAG (op 0) at conversion time would allocate "
                         "4.0 GiB")


@pytest.mark.parametrize("limit, fits", [(16, True), (15, False)])
def test_matrix_diag_agrees_with_litert_within_its_claim(limit, fits):
    model = one_op("MATRIX_DIAG", [Input("d", [4])], [Output("y", [4, 4])])
    if not fits:
        _refused_past(model, "would allocate 16 bytes", limit)
        return
    d = np.array([1, -2, 3, 4], np.float32)
    np.testing.assert_array_equal(_agrees_with_litert(model, {"d": d}, limit)["y"], np.diag(d))


def _resize(size, code="RESIZE_BILINEAR"):
    return one_op(code, [Input("x", [1, 4, 3, 1]), _i32(size)],
                  [Output("y", [1, *size, 1])])


@pytest.mark.parametrize("code", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_resize_tables_are_claimed_before_they_are_made(code):
    # Was: numpy asked for 8 GiB (bilinear), or 8 s then 4 GiB (nearest, 2**30 rows).
    _refused_past(_resize([2 ** 30, 1], code), f"computing {code} (op 0) at conversion time "
                                               f"would allocate 32.0 GiB")


@pytest.mark.parametrize("limit, fits", [(320, True), (319, False)])
def test_resize_agrees_with_litert_within_its_claim(limit, fits):
    if not fits:
        _refused_past(_resize([4, 6]), "would allocate 320 bytes", limit)
        return
    x = np.arange(12, dtype=np.float32).reshape(1, 4, 3, 1)
    _agrees_with_litert(_resize([4, 6], "RESIZE_NEAREST_NEIGHBOR"), {"x": x}, limit)


@pytest.mark.parametrize("limit, fits", [(9 * 8, True), (9 * 8 - 1, False)])
def test_local_response_normalization_claims_its_channel_band(limit, fits):
    model = one_op("LOCAL_RESPONSE_NORMALIZATION", [Input("x", [1, 1, 1, 3])],
                   [Output("y", [1, 1, 1, 3])], radius=1, bias=1.0, alpha=1.0, beta=0.5)
    if not fits:
        _refused_past(model, "computing LOCAL_RESPONSE_NORMALIZATION (op 0) at conversion time "
                             "would allocate 72 bytes", limit)
        return
    x = np.array([[[[1.0, 2.0, 2.0]]]], np.float32)
    got = run(_import(model, limit), {"x": x})["y"]
    # radius 1: channel c sums the squares of c - 1 .. c + 1; y = x / sqrt(1 + sum)
    np.testing.assert_allclose(got.reshape(-1), [1 / np.sqrt(6), 2 / np.sqrt(10), 2 / 3],
                               rtol=1e-6)


@pytest.mark.parametrize("limit, fits", [(12 * 24, True), (12 * 24 - 1, False)])
def test_densify_claims_its_walk_before_it(limit, fits):
    dense = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, 0, -3]], np.float32)
    sparsity, stored = sparse_parameters(dense)
    b = TfliteBuilder()
    w = b.constant("w_sparse", dense, sparsity=sparsity, stored=stored)
    y = b.tensor("y", [3, 4])
    b.op("DENSIFY", [w], [y])
    if not fits:
        _refused_past(b.build([y]), "computing DENSIFY (op 0) at conversion time would "
                                    "allocate 288 bytes", limit)
        return
    np.testing.assert_array_equal(run(_import(b.build([y]), limit), {})["y"], dense)


def test_a_broadcast_fill_with_a_single_row_is_one_number():
    graph = _import(_broadcast([[2.0]], [1, 4]))
    np.testing.assert_array_equal(run(graph, {})["y"], np.full((1, 4), 2.0, np.float32))


def test_a_broadcast_of_distinct_bytes_is_no_fill():
    # uint8 strides are 1 byte: only the broadcast (stride 0) axes may be cut to find a fill.
    model = one_op("BROADCAST_TO", [Const(np.array([[0, 1]], np.uint8)), _i32([3, 2])],
                   [Output("y", [3, 2], "uint8")])
    np.testing.assert_array_equal(run(_import(model), {})["y"], [[0, 1]] * 3)


def test_a_broadcast_past_the_spec_with_a_dimension_of_1_is_refused_too():
    with pytest.raises(UnsupportedError, match=r"its shape \[1, 2147483647, 2147483647\] is not "
                                               r"a WebNN shape"):
        _import(_broadcast([[1.0]], [1, BIG, BIG]))


def test_an_empty_range_claims_nothing():
    with pytest.raises(UnsupportedError, match=r"range\(5, 5, 1\) is empty"):
        _import(_range(5, start=5), max_tensor_bytes=1)


@pytest.mark.parametrize("weights, fits", [(36, True), (24, False)])
def test_the_total_for_computed_values_scales_with_the_weights(monkeypatch, weights, fits):
    # A floor of 64 bytes here; the weights are w and the range's three 4-byte bounds: twice
    # 36 + 12 allows the 80-byte range, twice 24 + 12 does not (nor would the floor alone).
    import converter.budget

    monkeypatch.setattr(converter.budget, "MIN_TOTAL_BYTES", 64)
    b = TfliteBuilder()
    w = b.constant("w", np.ones(weights // 4, np.float32))
    y, z = b.tensor("y", [10], "int32"), b.tensor("z", [weights // 4])
    b.op("RANGE", [b.constant("s", np.array(0, np.int32)), b.constant("l", np.array(10, np.int32)),
                   b.constant("d", np.array(1, np.int32))], [y])
    b.op("NEG", [w], [z])
    if fits:
        np.testing.assert_array_equal(run(_import(b.build([y, z])), {})["y"], np.arange(10))
    else:
        _refused_past(b.build([y, z]), "taking the conversion past its limit of 72 bytes")
