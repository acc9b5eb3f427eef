"""Every layout rule keeps its promise on random shapes, permutations and arguments:

    op(transpose(x, perm), args) == transpose(op(x, args'), out_perm)

where (args', out_perm) is what the rule (converter/passes/layout_rules.py) answers for `perm`.
Both sides are built as graphs and run through the executor; a rule that answers None (the op
cannot take this permutation) is allowed only where the test says it may be."""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import converter
from converter.ir import Graph
from converter.passes.layout_rules import OpView, rule_for


def _graph(op_type, x_shape, perm, attrs, extra_inputs=()):
    """x -> [transpose by perm] -> op (x carried; extra constant operands after it)."""
    g = Graph("rule")
    x = g.add_input("x", "float32", list(x_shape))
    src = x if perm is None else g.add_operation("transpose", [x], {"permutation": perm}).outputs[0]
    consts = [g.add_constant(f"c{i}", v) for i, v in enumerate(extra_inputs)]
    op = g.add_operation(op_type, [src, *consts], attrs)
    return g, op


def _check(op_type, source_shape, perm, attrs, extra_inputs=(), may_refuse=False):
    x = np.random.default_rng(0).standard_normal(source_shape).astype(np.float32)
    # left side: the op reads transpose(x, perm)
    left, op = _graph(op_type, source_shape, perm, attrs, extra_inputs)
    for i, out in enumerate(op.outputs):
        left.set_output(f"y{i}", out)
    rule = rule_for(op_type)
    answer = rule.remap(OpView.of(op), list(perm))
    if answer is None:
        assert may_refuse, f"{op_type} refused {perm} with {attrs}"
        return
    want = converter.run(left.verify(), {"x": x})
    # right side: the op on x itself, with the rule's arguments, then out_perm
    new_attrs = {k: v for k, v in {**attrs, **answer.attrs}.items() if v is not None}
    right, op2 = _graph(op_type, source_shape, None, new_attrs, extra_inputs)
    for i, (out, back) in enumerate(zip(op2.outputs, answer.outputs)):
        if back is not None:
            out = right.add_operation("transpose", [out], {"permutation": list(back)}).outputs[0]
        right.set_output(f"y{i}", out)
    got = converter.run(right.verify(), {"x": x})
    for key in want:
        assert got[key].shape == want[key].shape, (op_type, perm, attrs, answer)
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{op_type} {perm} {attrs} -> {answer}")


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@st.composite
def shape_and_perm(draw, min_rank=1):
    shape = draw(shapes.filter(lambda s: len(s) >= min_rank))
    perm = draw(st.permutations(range(len(shape))))
    return shape, list(perm)


def _transposed(shape, perm):
    return [shape[p] for p in perm]


@given(shape_and_perm(), st.data(), st.sampled_from(["softmax", "cumulativeSum", "argMax",
                                                     "argMin", "reduceSum", "reduceMax",
                                                     "reduceMean", "layerNormalization"]))
def test_axis_rules(sp, data, op_type):
    shape, perm = sp
    rank = len(shape)
    if op_type in ("softmax", "cumulativeSum"):
        attrs = {"axis": data.draw(st.integers(0, rank - 1))}
        if op_type == "cumulativeSum":
            attrs["reversed"] = data.draw(st.booleans())
    elif op_type in ("argMax", "argMin"):
        attrs = {"axis": data.draw(st.integers(0, rank - 1)),
                 "keepDimensions": data.draw(st.booleans())}
    elif op_type == "layerNormalization":
        attrs = {"axes": data.draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1))}
    else:
        attrs = {"axes": data.draw(st.lists(st.integers(0, rank - 1), unique=True)),
                 "keepDimensions": data.draw(st.booleans())}
    _check(op_type, shape, perm, attrs)


@given(shape_and_perm(), st.data())
def test_data_movement_rules(sp, data):
    shape, perm = sp
    t = _transposed(shape, perm)
    rank = len(shape)
    kind = data.draw(st.sampled_from(["slice", "pad", "tile", "reverse", "transpose", "split",
                                      "expand", "concat"]))
    if kind == "slice":
        starts = [data.draw(st.integers(0, d - 1)) for d in t]
        sizes = [data.draw(st.integers(1, d - s)) for d, s in zip(t, starts)]
        attrs = {"starts": starts, "sizes": sizes,
                 "strides": [data.draw(st.integers(1, 2)) for _ in t]}
    elif kind == "pad":
        attrs = {"beginningPadding": [data.draw(st.integers(0, 2)) for _ in t],
                 "endingPadding": [data.draw(st.integers(0, 2)) for _ in t],
                 "mode": data.draw(st.sampled_from(["constant", "edge"])), "value": 0.25}
    elif kind == "tile":
        attrs = {"repetitions": [data.draw(st.integers(1, 3)) for _ in t]}
    elif kind == "reverse":
        attrs = {"axes": data.draw(st.lists(st.integers(0, rank - 1), unique=True))}
    elif kind == "transpose":
        given_perm = data.draw(st.none() | st.permutations(range(rank)))
        attrs = {} if given_perm is None else {"permutation": list(given_perm)}
    elif kind == "split":
        axis = data.draw(st.integers(0, rank - 1))
        first = data.draw(st.integers(0, t[axis]))
        splits = [s for s in (first, t[axis] - first) if s > 0]
        attrs = {"splits": splits, "axis": axis}
    elif kind == "expand":
        lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
        attrs = {"newShape": lead + [d if d != 1 else data.draw(st.integers(1, 3)) for d in t]}
    else:  # concat of the carried operand with itself
        axis = data.draw(st.integers(0, rank - 1))
        _check_concat(shape, perm, axis)
        return
    _check(kind, shape, perm, attrs)


def _check_concat(shape, perm, axis):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    g = Graph("c")
    xi = g.add_input("x", "float32", list(shape))
    t = g.add_operation("transpose", [xi], {"permutation": perm}).outputs[0]
    op = g.add_operation("concat", [t, t], {"axis": axis})
    g.set_output("y", op.outputs[0])
    answer = rule_for("concat").remap(OpView.of(op), perm)
    assert answer is not None
    g2 = Graph("c2")
    x2 = g2.add_input("x", "float32", list(shape))
    out = g2.add_operation("concat", [x2, x2], {**{"axis": axis}, **answer.attrs}).outputs[0]
    if answer.outputs[0] is not None:
        out = g2.add_operation("transpose", [out], {"permutation": answer.outputs[0]}).outputs[0]
    g2.set_output("y", out)
    np.testing.assert_array_equal(converter.run(g2.verify(), {"x": x})["y"],
                                  converter.run(g.verify(), {"x": x})["y"])


@given(shape_and_perm(), st.data())
def test_gather_rule(sp, data):
    shape, perm = sp
    t = _transposed(shape, perm)
    axis = data.draw(st.integers(0, len(shape) - 1))
    idx_shape = data.draw(st.lists(st.integers(1, 3), max_size=2))
    idx = np.random.default_rng(2).integers(0, t[axis], idx_shape).astype(np.int32)
    _check("gather", shape, perm, {"axis": axis}, [idx], may_refuse=True)


@given(shape_and_perm(min_rank=2), st.booleans(), st.integers(-2, 2))
def test_triangular_rule(sp, upper, diagonal):
    shape, perm = sp
    _check("triangular", shape, perm, {"upper": upper, "diagonal": diagonal}, may_refuse=True)


@given(shape_and_perm(), st.data())
def test_reshape_rule(sp, data):
    shape, perm = sp
    t = _transposed(shape, perm)
    kind = data.draw(st.sampled_from(["flatten", "unsqueeze", "merge_pair", "split_axis"]))
    if kind == "flatten":
        new_shape = [int(np.prod(t))]
    elif kind == "unsqueeze":
        at = data.draw(st.integers(0, len(t)))
        new_shape = t[:at] + [1] + t[at:]
    elif kind == "merge_pair" and len(t) >= 2:
        at = data.draw(st.integers(0, len(t) - 2))
        new_shape = t[:at] + [t[at] * t[at + 1]] + t[at + 2:]
    else:
        at = data.draw(st.integers(0, len(t) - 1))
        assume(t[at] % 2 == 0)
        new_shape = t[:at] + [2, t[at] // 2] + t[at + 1:]
    _check("reshape", shape, perm, {"newShape": new_shape}, may_refuse=True)


@given(st.sampled_from([[0, 2, 3, 1], [0, 3, 1, 2], [0, 1, 2, 3], [0, 2, 1, 3]]),
       st.sampled_from([[2, 3], [1, 2]]), st.sampled_from(["nearest-neighbor", "linear"]))
def test_resample_and_batch_normalization_rules(perm, axes, mode):
    shape = (1, 2, 3, 4)
    _check("resample2d", shape, perm, {"axes": axes, "scales": [2.0, 1.5], "mode": mode})
    t = _transposed(shape, perm)
    for axis in range(4):
        c = t[axis]
        mean = np.linspace(-1, 1, c).astype(np.float32)
        var = np.linspace(0.5, 2, c).astype(np.float32)
        _check("batchNormalization", shape, perm, {"axis": axis}, [mean, var])
