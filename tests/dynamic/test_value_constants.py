"""A decoder-like graph converted at every past length 0..5: its first step has another
structure (no past to grow) and a folded position row differs per length in no way a corner
of one table follows. The module is one builder for 0 and one for 1..5 whose row is read per
length from the weights file (converter.dynamic.module_groups, symbolic's `value` form); with
lengths left out, a per-length row cannot be extrapolated and is refused, saying why. T5's
relative-position bias (the last past+1 entries of one row) is one constant cut from its end
(`tail`), at lengths not converted too."""
from __future__ import annotations

import re

import numpy as np
import pytest

import converter
from converter.dynamic.module_js import variants_source
from converter.dynamic.symbolic import StructureDiffers, polymorphic
from converter.dynamic.variants import Variants

WIDTH = 4
ROWS = np.random.default_rng(3).standard_normal((8, 1, 1, WIDTH)).astype(np.float32)


def _step(past: int) -> converter.Graph:
    """The token's row plus position `past`'s row (a constant), appended to the past rows."""
    g = converter.GraphBuilder("step")
    x = g.input("x", "float32", [1, 1, WIDTH])
    row = g.add(x, g.constant(ROWS[past], name="position"), name="embed")
    if past:
        row = g.concat([g.input("past", "float32", [1, past, WIDTH]), row], 1, name="grow")
    return g.build({"present": row})


def _variants(lengths) -> Variants:
    return Variants(("past",), [({"past": p}, _step(p)) for p in lengths],
                    convert=lambda at: _step(at["past"]))


def test_every_length_converted_gives_one_builder_per_structure():
    source, weights, note = variants_source(_variants(range(6)), "step.weights")
    assert note.startswith("2 builders for past in 0..5, one for each of 0; 1..5: the whole "
                           "range is not one graph (the model converted at past=1: ")
    assert re.findall(r"^async function (build\d+)\(", source, re.M) == ["build0", "build1"]
    assert 'export const DIMS = {"past": {min: 0, max: 5}};' in source
    # the builder of 1..5 reads its length's row: one weights entry per length
    assert '[`${dims["past"]}`]' in source
    rows = [data.numpy() for _, data in weights]
    assert len(rows) == 6
    assert all(any(np.array_equal(r, ROWS[p]) for r in rows) for p in range(6))


def test_a_per_length_row_is_refused_where_lengths_were_left_out():
    with pytest.raises(StructureDiffers) as caught:
        polymorphic(_variants([1, 3, 5]), lambda at: _step(at["past"]))
    assert "constant 'position'" in caught.value.line()
    assert "so only the converted values have it" in caught.value.line()
    source, _, note = variants_source(_variants([1, 3, 5]), "step.weights",
                                      lambda at: _step(at["past"]))
    assert note.startswith("one builder per value (past in 1, 3, 5): ")
    assert "only the converted values have it" in note


BIAS = np.random.default_rng(5).standard_normal((1, 2, 1, 9)).astype(np.float32)


def _biased(past: int) -> converter.Graph:
    """T5's relative-position bias of one decoder step: the last past+1 keys' entries of one
    row (a trailing corner of the longest step's row, not a leading one)."""
    g = converter.GraphBuilder("biased")
    scores = g.input("scores", "float32", [1, 2, 1, past + 1])
    bias = g.constant(np.ascontiguousarray(BIAS[..., BIAS.shape[-1] - past - 1:]), name="bias")
    return g.build({"y": g.add(scores, bias, name="biased")})


def test_a_trailing_corner_is_one_constant_cut_at_each_length():
    convert = lambda at: _biased(at["past"])  # noqa: E731
    variants = Variants(("past",), [({"past": p}, _biased(p)) for p in (0, 4, 8)],
                        ranges={"past": (0, 8)}, convert=convert)
    poly = polymorphic(variants, convert)
    assert poly.constants["bias"].kind == "tail" and poly.checked_at == [{"past": 2}]
    source, weights, note = variants_source(variants, "b.weights", convert)
    assert note.startswith("one builder for past in 0..8")
    assert [tuple(data.shape) for _, data in weights] == [(1, 2, 1, 9)]  # stored once
    assert '[1, 2, 1, dims["past"] + 1], true))' in source  # cut from the end when built
    graph = variants.at({"past": 5})  # a length not converted, from the expressions
    np.testing.assert_array_equal(graph.constants["bias"].constant.numpy(), BIAS[..., 3:])
