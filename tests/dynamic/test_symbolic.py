"""Shapes and options of several conversions as polynomials of the dims (converter.dynamic.symbolic):
the fit is exact and integer, a product of dims is found, and an expression that is wrong at a
held-out value is reported, not written."""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import converter
from converter.dynamic.symbolic import (Expr, HeldOutMismatch, StructureDiffers, _steps, fit,
                                        held_out_point, held_out_points, polymorphic)
from converter.dynamic.variants import Variants
from converter.conversion.variants import convert_variants

from .tiny_bert import build


def test_one_dim_is_fitted_exactly_and_written_as_javascript():
    points = [{"sequence": s} for s in (8, 16, 32)]
    e = fit(points, [3 * s - 1 for s in (8, 16, 32)])
    assert e.terms == ((("sequence",), 3), ((), -1)) or dict(e.terms) == {("sequence",): 3, (): -1}
    assert e.at({"sequence": 24}) == 71 and e.at({"sequence": 1000}) == 2999
    assert str(e) == "3 * sequence - 1"
    assert e.js() == '3 * dims["sequence"] - 1'


def test_a_product_of_dims_is_found_on_a_grid():
    points = [{"batch": b, "sequence": s} for b in (1, 2, 4) for s in (8, 16)]
    values = [b * s * 12 + b + 7 for b, s in ((p["batch"], p["sequence"]) for p in points)]
    e = fit(points, values)
    assert dict(e.terms) == {("batch", "sequence"): 12, ("batch",): 1, (): 7}
    assert e.at({"batch": 3, "sequence": 24}) == 3 * 24 * 12 + 3 + 7


def test_a_constant_stays_a_constant():
    e = fit([{"s": 8}, {"s": 16}], [5, 5])
    assert e.is_constant and e.at({"s": 99}) == 5 and e.js() == "5"


def test_what_no_polynomial_gives_is_refused():
    with pytest.raises(StructureDiffers, match="no polynomial"):  # s*s: degree 2 in one dim
        fit([{"s": 8}, {"s": 16}, {"s": 32}], [64, 256, 1024], where="reshape 'r' newShape[1]")


def test_a_fraction_of_a_dim_is_written_with_one_exact_division():
    e = fit([{"h": 16}, {"h": 32}, {"h": 64}], [9, 17, 33])  # h / 2 + 1
    assert e.denominator == 2 and str(e) == "(h + 2) / 2"
    assert e.js() == '(dims["h"] + 2) / 2'
    assert e.at({"h": 48}) == 25 and isinstance(e.at({"h": 48}), int)
    assert e.at({"h": 17}) == Fraction(19, 2)


def _strided(h: int, w: int) -> converter.Graph:
    """A stride-2 pooling of [1, 1, h, w], reshaped to [h/2 * w/2]: whole at even h and w only;
    the window is a fixed 2x2, the reshape's length (h/2)(w/2) = h*w/4."""
    g = converter.GraphBuilder("strided")
    x = g.input("x", "float32", [1, 1, h, w])
    y = g.averagePool2d(x, windowDimensions=[2, 2], strides=[2, 2], name="pool")
    return g.build({"y": g.reshape(y, [h * w // 4], name="flat")})


def test_a_stride_makes_the_dims_go_in_steps():
    points = [(h, w) for h in (8, 16, 32) for w in (8, 12)]
    variants = Variants(("h", "w"), [({"h": h, "w": w}, _strided(h, w)) for h, w in points])
    poly = polymorphic(variants, lambda at: _strided(at["h"], at["w"]))
    assert poly.steps == {"h": 2, "w": 2} and poly.ranges == {"h": (8, 32), "w": (8, 12)}
    # the gap 16..32 in steps of 2: the middle is 24; w's gap 8..12 is two steps: 10
    assert poly.checked_at == [{"h": 24, "w": 10}]
    (i,) = poly.attrs
    assert [e.js() for e in poly.attrs[i]["newShape"]] == ['(dims["h"] * dims["w"]) / 4']


def _product(h: int, w: int) -> converter.Graph:
    g = converter.GraphBuilder("product")
    x = g.input("x", "float32", [h, w])
    return g.build({"y": g.reshape(x, [h * w // 4, 4], name="quarters")})


def test_the_smallest_steps_that_keep_the_shapes_whole_are_taken():
    # h*w/4 alone is whole when h and w are both even: steps of 2, not 4
    variants = Variants(("h", "w"), [({"h": h, "w": w}, _product(h, w))
                                     for h in (8, 10, 16) for w in (2, 4, 8)])
    poly = polymorphic(variants, lambda at: _product(at["h"], at["w"]))
    assert poly.steps == {"h": 2, "w": 2} and poly.checked_at == [{"h": 12, "w": 6}]


def test_listed_values_off_every_step_are_refused():
    half = Expr(((("h",), Fraction(1, 2)),))
    assert _steps([half], [{"h": 8}, {"h": 12}]) == {"h": 2}
    with pytest.raises(StructureDiffers, match="no steps of the dims through every listed"):
        _steps([half], [{"h": 8}, {"h": 11}])


def test_dims_varied_together_cannot_be_told_apart():
    points = [{"batch": 1, "sequence": 8}, {"batch": 2, "sequence": 16}]
    with pytest.raises(StructureDiffers, match="cannot tell"):
        fit(points, [8, 32])


def test_a_hostile_dim_name_is_escaped_in_javascript():
    name = 'a"]; alert(1); //\u2028</script>'
    js = Expr((((name,), 2),)).js()
    assert js.startswith('2 * dims[') and js.endswith(']')
    literal = js[len('2 * dims['):-1]
    assert json.loads(literal) == name  # one string literal holding exactly the name
    assert "<" not in js and "\u2028" not in js


def test_held_out_point_is_the_middle_of_the_widest_gap():
    assert held_out_point([{"s": 8}, {"s": 16}, {"s": 32}]) == {"s": 24}
    assert held_out_point([{"s": 8, "b": 1}, {"s": 9, "b": 1}]) is None


def test_a_dim_without_a_gap_is_checked_at_each_of_its_values():
    grid = [{"b": b, "s": s} for b in (1, 2) for s in (8, 16, 32)]
    assert held_out_points(grid) == [{"s": 24, "b": 1}, {"s": 24, "b": 2}]
    assert held_out_point(grid) == {"s": 24, "b": 2}


def _scaled(b: int, s: int, bucket: bool = False) -> converter.Graph:
    """[b, s] -> reshape to [b * s] (a product of dims); with `bucket`, padded at b=1 only to
    the next even length (right on every listed even s, wrong at b=1 and an odd s)."""
    g = converter.GraphBuilder("scaled")
    x = g.input("x", "float32", [b, s])
    extra = s % 2 if bucket and b == 1 else 0
    y = g.pad(x, [0, 0], [0, extra], name="padded")
    return g.build({"y": g.reshape(y, [b * (s + extra)], name="flat")})


def test_a_grid_with_a_gapless_dim_is_checked_at_every_value_of_it():
    points = [(b, s) for b in (1, 2) for s in (8, 16, 32)]
    seen = []

    def convert(at):
        seen.append(dict(at))
        return _scaled(at["b"], at["s"])

    variants = Variants(("b", "s"), [({"b": b, "s": s}, _scaled(b, s)) for b, s in points])
    poly = polymorphic(variants, convert)
    assert seen == poly.checked_at == [{"s": 24, "b": 1}, {"s": 24, "b": 2}]
    (i,) = poly.attrs
    assert [str(e) for e in poly.attrs[i]["newShape"]] == ["b * s"]
    # wrong only at b=1 and an odd s: the check at b=1, s=23 (the middle of 16..30) catches it
    odd = [(b, s) for b in (1, 2) for s in (8, 16, 30)]
    variants = Variants(("b", "s"), [({"b": b, "s": s}, _scaled(b, s, True)) for b, s in odd])
    with pytest.raises(HeldOutMismatch, match="b=1,s=23"):
        polymorphic(variants, lambda at: _scaled(at["b"], at["s"], True))


def test_every_value_of_the_range_listed_needs_no_check():
    variants = Variants(("b", "s"), [({"b": b, "s": s}, _scaled(b, s))
                                     for b in (1, 2) for s in (8, 9, 10)])
    poly = polymorphic(variants, lambda at: pytest.fail(f"converted again at {at}"))
    assert poly.checked_at == [] and poly.ranges == {"b": (1, 2), "s": (8, 10)}
    gappy = Variants(("s",), [({"s": s}, _scaled(1, s)) for s in (8, 9, 11)],
                     ranges={"s": (8, 11)})
    assert polymorphic(gappy, lambda at: _scaled(1, at["s"])).checked_at == [{"s": 10}]


def test_the_bert_model_is_one_graph_whose_shapes_follow_the_sequence(tmp_path):
    source = build(tmp_path / "bert.onnx")
    variants = convert_variants(source, {"sequence": [8, 16, 32]})
    poly = polymorphic(variants, variants.convert)
    assert poly.checked_at == [{"sequence": 24}]
    assert poly.ranges == {"sequence": (8, 32)}
    at = {"sequence": 24}
    assert [e.at(at) for e in poly.input_shapes["input_ids"]] == [1, 24]
    assert [e.at(at) for e in poly.output_shapes["last_hidden_state"]] == [1, 24, 16]
    reshapes = {poly.template.operations[i].name: [str(e) for e in a["newShape"]]
                for i, a in poly.attrs.items()}
    assert reshapes["Reshape_10/reshape"] == ["1", "sequence", "2", "8"]
    assert reshapes["Reshape_29/reshape"] == ["1", "sequence", "16"]
    # the position rows, folded per value by the importer, become a corner of the largest
    form = poly.constants["pos_rows"]
    assert form.kind == "corner" and form.data.shape == (32, 16)
    assert [str(e) for e in form.shape] == ["sequence", "16"]
    table = converter.load(source, dims={"sequence": 24}).constants["pos_rows"].constant.numpy()
    np.testing.assert_array_equal(form.data.numpy()[:24], table)
    assert poly.constants["word"].kind == "same"


def test_without_a_converter_a_listed_value_is_left_out_and_checked(tmp_path):
    source = build(tmp_path / "bert.onnx")
    poly = polymorphic(convert_variants(source, {"sequence": [8, 16, 32]}))
    assert poly.checked_at == [{"sequence": 16}]
    with pytest.raises(StructureDiffers, match="left out"):
        polymorphic(convert_variants(source, {"sequence": [8, 16]}))


def _bucketed(s: int) -> converter.Graph:
    """A graph that pads its input up to the next power of two (as bucketing exporters do):
    the padding is 0 at 8, 16, 32, so a fit on those says "always 0", which is wrong at 24."""
    b = converter.GraphBuilder("bucketed")
    x = b.input("x", "float32", [1, s])
    bucket = 1 << (s - 1).bit_length()
    y = b.pad(x, [0, 0], [0, bucket - s], name="padded")
    return b.build({"y": b.reshape(y, [bucket], name="flat")})


def test_an_expression_wrong_at_the_held_out_value_is_reported():
    variants = Variants(("s",), [({"s": s}, _bucketed(s)) for s in (8, 16, 32)])
    with pytest.raises(HeldOutMismatch) as caught:
        polymorphic(variants, lambda at: _bucketed(at["s"]))
    line = caught.value.line()
    assert "s=24" in line and "padded" in line and "[0, 8]" in line and "[0, 0]" in line


def test_a_different_structure_is_named():
    def graph(s):
        b = converter.GraphBuilder("g")
        x = b.input("x", "float32", [1, s])
        y = b.relu(x) if s < 16 else b.sigmoid(x)
        return b.build({"y": y})
    with pytest.raises(StructureDiffers, match="s=16"):
        polymorphic(Variants(("s",), [({"s": s}, graph(s)) for s in (8, 16, 32)]))
