"""Zero-sized tensors (issue 17): a SPLIT_V part of size 0, a slice of nothing. WebNN has no
empty tensors, so they are arrays known at conversion time: dropped when nothing reads them,
left out of a concatenation and of the model's outputs (named in a warning), and refused by
name only where an op needs one as an operand. Checked against LiteRT, which runs them all."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.dropped_outputs import DroppedOutputWarning, dropped_outputs
from converter.importers.tflite import import_tflite
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import TfliteBuilder

from .helpers import EXACT, check, op_named, ops_of, rand, refused


def _split_v(b: TfliteBuilder, x: int, sizes: list[int], width: int = 6) -> list[int]:
    """SPLIT_V of x [2, width] along axis 1; a size of -1 takes the rest."""
    s = b.constant("sizes", np.array(sizes, np.int32))
    axis = b.constant("axis", np.array(1, np.int32))
    rest = width - sum(n for n in sizes if n >= 0)
    parts = [b.tensor(f"part{i}", [2, n if n >= 0 else rest]) for i, n in enumerate(sizes)]
    b.op("SPLIT_V", [x, s, axis], parts, numSplits=len(sizes))
    return parts


@pytest.mark.parametrize("sizes", [[2, 0, 4], [0, 6], [6, 0], [2, 0, -1], [0, 3, 0, 3]])
def test_split_v_drops_an_unused_empty_part(sizes):
    b = TfliteBuilder()
    x = b.input("x", [2, 6])
    parts = _split_v(b, x, sizes)
    used = [p for p, n in zip(parts, sizes) if n != 0]
    xv = rand(2, 6)
    graph, got = check(b.build(used), {"x": xv}, EXACT)
    names = [f"part{i}" for i, n in enumerate(sizes) if n != 0]
    assert set(got) == set(names)
    np.testing.assert_array_equal(np.concatenate([got[n] for n in names], axis=1), xv)
    assert ops_of(graph) == (["split"] if len(names) > 1 else ["identity"])


def test_split_v_empty_part_concatenated_is_left_out():
    """SPLIT_V [4, 0] then CONCATENATION of both parts: only the filled one is concatenated."""
    b = TfliteBuilder()
    x = b.input("x", [2, 4])
    a, empty = _split_v(b, x, [4, 0])
    y = b.input("y", [2, 3])
    z = b.tensor("z", [2, 7])
    b.op("CONCATENATION", [a, empty, y], [z], axis=1)
    xv, yv = rand(2, 4), rand(2, 3)
    graph, got = check(b.build([z]), {"x": xv, "y": yv}, EXACT)
    np.testing.assert_array_equal(got["z"], np.concatenate([xv, yv], axis=1))
    assert len(op_named(graph, "concat").inputs) == 2


def test_empty_strided_slice_feeding_a_concatenation():
    b = TfliteBuilder()
    x = b.input("x", [2, 5])
    begin = b.constant("begin", np.array([0, 3], np.int32))
    end = b.constant("end", np.array([2, 3], np.int32))
    strides = b.constant("strides", np.array([1, 1], np.int32))
    empty = b.tensor("nothing", [2, 0])
    b.op("STRIDED_SLICE", [x, begin, end, strides], [empty])
    z = b.tensor("z", [2, 5])
    b.op("CONCATENATION", [empty, x], [z], axis=1)
    xv = rand(2, 5)
    graph, got = check(b.build([z]), {"x": xv}, EXACT)
    np.testing.assert_array_equal(got["z"], xv)


def test_an_empty_part_an_op_needs_is_refused_by_name():
    b = TfliteBuilder()
    x = b.input("x", [2, 6])
    a, empty, c = _split_v(b, x, [2, 0, 4])
    y = b.tensor("doubled", [2, 0])
    b.op("ADD", [empty, empty], [y])
    model = b.build([a, y])
    assert run_litert(model, {"x": rand(2, 6)})["doubled"].shape == (2, 0)
    message = str(refused(model))
    assert "ADD (op 1 -> 'doubled'): it reads tensor" in message
    assert "'part1', which is empty (shape [2, 0]); WebNN has no empty tensors" in message


def test_an_empty_graph_output_is_dropped_with_a_warning_and_the_rest_matches_litert():
    b = TfliteBuilder()
    x = b.input("x", [2, 6])
    parts = _split_v(b, x, [2, 0, 4])
    model = b.build(parts)
    xv = rand(2, 6)
    want = run_litert(model, {"x": xv})
    assert want["part1"].shape == (2, 0)  # LiteRT gives the empty part
    with pytest.warns(DroppedOutputWarning, match=r"output 'part1' dropped: it is empty "
                                                  r"\(shape \[2, 0\]\)"):
        graph = import_tflite(model)
    assert list(graph.outputs) == ["part0", "part2"]
    assert dropped_outputs(graph) == [{"name": "part1", "shape": [2, 0]}]
    got = run(graph, {"x": xv})
    for name in ("part0", "part2"):
        np.testing.assert_array_equal(got[name], want[name])


def test_a_model_whose_every_output_is_empty_is_refused():
    b = TfliteBuilder()
    x = b.input("x", [2, 6])
    parts = _split_v(b, x, [2, 0, 4])
    with pytest.raises(UnsupportedError, match=r"graph output 'part1' is empty \('part1' has "
                                               r"shape \[2, 0\], with a 0 dimension\); WebNN "
                                               r"has no empty tensors"):
        import_tflite(b.build([parts[1]]))


def _sum_of_an_empty_slice(dtype: str) -> bytes:
    """SUM over axis 1 of x[:, 3:3]: LiteRT answers zeros, an empty sum."""
    b = TfliteBuilder()
    x = b.input("x", [2, 5], dtype)
    begin = b.constant("begin", np.array([0, 3], np.int32))
    size = b.constant("size", np.array([2, 0], np.int32))
    empty = b.tensor("nothing", [2, 0], dtype)
    b.op("SLICE", [x, begin, size], [empty])
    axes = b.constant("axes", np.array([1], np.int32))
    y = b.tensor("y", [2], dtype)
    b.op("SUM", [empty, axes], [y])
    return b.build([y])


def test_an_empty_int32_slice_sums_to_zeros_as_litert():
    """The empty slice keeps its input's type: int32 shape arithmetic is folded to zeros."""
    x = np.arange(10, dtype=np.int32).reshape(2, 5)
    graph, got = check(_sum_of_an_empty_slice("int32"), {"x": x}, EXACT)
    np.testing.assert_array_equal(got["y"], [0, 0])
    assert got["y"].dtype == np.int32


def test_an_empty_float_slice_summed_is_refused_by_name():
    """A float32 slice of nothing is not integer shape arithmetic: SUM needs it as an operand."""
    model = _sum_of_an_empty_slice("float32")
    np.testing.assert_array_equal(run_litert(model, {"x": rand(2, 5)})["y"], [0, 0])
    assert "SUM (op 1 -> 'y'): it reads tensor 3 'nothing', which is empty" in str(refused(model))
