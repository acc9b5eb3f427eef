"""The layout pass's counts (what it reports in the conversion report) on graphs small enough
to say by hand what each step must do, with the numbers checked against the graph before."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder

from .layout_helpers import check_numbers, conv, seeded, types


def _build(case):
    def build():
        b = GraphBuilder(case)
        x = b.input("x", "float32", [2, 3, 4, 5])
        if case == "pair":  # a transpose and its inverse: nothing moves
            inner = b.transpose(b.transpose(x, permutation=[0, 2, 3, 1]), permutation=[0, 3, 1, 2])
            return b.build({"y": b.relu(inner)})
        if case == "merge":  # two transposes: one, pushed to the output
            inner = b.transpose(b.transpose(x, permutation=[0, 2, 3, 1]), permutation=[1, 0, 2, 3])
            return b.build({"y": b.relu(inner)})
        if case == "identity":  # moves nothing: its reader reads x
            return b.build({"y": b.relu(b.transpose(x, permutation=[0, 1, 2, 3]))})
        if case == "identity output":  # an output must stay a result: kept, as a reshape
            return b.build({"y": b.transpose(x, permutation=[0, 1, 2, 3])})
        if case == "unit":  # moves only a size-1 axis: a reshape
            w = b.input("w", "float32", [2, 1, 4, 5])
            return b.build({"y": b.relu(b.transpose(w, permutation=[0, 2, 1, 3]))})
        # a constant operand takes the transpose's inverse, folded
        c = b.constant(seeded((2, 5, 3, 4), 3))
        return b.build({"y": b.add(b.transpose(x, permutation=[0, 3, 1, 2]), c)})
    return build


EXPECTED = {
    "pair": ({"transpose_pairs_cancelled": 1, "transposes_after": 0}, ["relu"]),
    "merge": ({"transposes_merged": 1, "pushed_down": 1, "transposes_after": 1},
              ["relu", "transpose"]),
    "identity": ({"identity_transposes_removed": 1, "transposes_after": 0}, ["relu"]),
    "identity output": ({"transposes_made_reshapes": 1, "transposes_after": 0}, ["reshape"]),
    "unit": ({"transposes_made_reshapes": 1, "pushed_down": 1, "transposes_after": 0},
             ["relu", "reshape"]),
    "constant": ({"constants_transposed": 1, "pushed_down": 1, "transposes_after": 1},
                 ["add", "transpose"]),
}


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_each_step_is_counted_once(case, layout):
    after, result = check_numbers(_build(case), layout)
    counts, ops = EXPECTED[case]
    assert types(after) == ops
    assert {k: result.counts.get(k, 0) for k in counts} == counts
    steps = {k: v for k, v in result.counts.items() if not k.startswith("transposes_")}
    assert steps == {k: v for k, v in counts.items() if not k.startswith("transposes_")}
    assert result.counts["transposes_after_inside"] == 0


@pytest.mark.parametrize("perm,passes", [([1, 0, 2, 3], True),  # the last two axes stay
                                         ([0, 1, 3, 2], False),  # rows and columns swap
                                         ([0, 2, 1, 3], False)])  # another axis's rows
def test_a_transpose_passes_triangular_only_when_the_matrix_axes_stay(perm, passes):
    def build():
        b = GraphBuilder("triangular")
        x = b.input("x", "float32", [2, 3, 4, 5])
        inner = b.transpose(x, permutation=perm)
        return b.build({"y": b.triangular(inner, upper=True, diagonal=1)})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == (["triangular", "transpose"] if passes
                            else ["transpose", "triangular"])
    assert result.counts.get("pushed_down", 0) == (1 if passes else 0)


def test_transposes_are_pushed_down_in_graph_order():
    """Which transpose is pushed down first decides what is left when transposes read each
    other and several are outputs: in graph order (sources before their readers) three are
    left; taking the last first leaves four (merging y's pair first makes a transpose that
    cannot then meet the others)."""
    def build():
        b = GraphBuilder("order")
        x = b.input("x", "float32", [1, 3, 4, 6])
        a = b.transpose(x, permutation=[0, 1, 3, 2])
        t1 = b.transpose(a, permutation=[0, 2, 1, 3])
        u = b.transpose(t1, permutation=[0, 2, 3, 1])
        v = b.tanh(x)
        w = b.transpose(a, permutation=[0, 2, 1, 3])
        y = b.transpose(t1, permutation=[0, 1, 3, 2])
        return b.build({"y": y, "u": u, "v": v, "w": w})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "transpose", "tanh", "transpose"]
    x, out = after.inputs["x"], after.outputs

    def made(name):
        op = out[name].producer
        return op.inputs[0], op.attr("permutation")
    assert made("w") == (x, [0, 3, 1, 2]) and made("y") == (x, [0, 3, 2, 1])
    # u is x again, but an output must stay an op's result: it reads w's transpose
    assert made("u") == (out["w"], [0, 2, 3, 1])
    assert out["v"].producer.inputs[0] is x
    assert result.counts["transposes_before"] == 5 and result.counts["transposes_after"] == 3


def test_a_transpose_pushed_onto_one_already_visited_is_revisited():
    """t3's copies pushed down below the add meet the transpose reading it, visited earlier
    (when it read the add's result itself): it is visited again, merges, and the merged one
    goes on down to the output, where it only moves size-1 axes (a reshape). One transpose is
    left, for z; without the second visit three are."""
    def build():
        b = GraphBuilder("revisit")
        x = b.input("x", "float32", [1, 3, 4, 6])
        m = b.reduceMean(b.transpose(x, permutation=[0, 3, 1, 2]), axes=[2],
                         keepDimensions=True)
        twice = b.add(m, m)
        t3 = b.transpose(twice, permutation=[0, 2, 1, 3])
        shifted = b.add(t3, b.constant(seeded((1, 1, 6, 4), 0)))
        y = b.transpose(b.transpose(shifted, permutation=[1, 3, 0, 2]),
                        permutation=[0, 2, 1, 3])
        return b.build({"y": y, "z": b.tanh(t3)})

    after, result = check_numbers(build, "nchw")
    assert types(after) == ["reduceMean", "add", "transpose", "add", "reshape", "tanh",
                            "reshape"]
    [t] = [op for op in after.operations if op.op_type == "transpose"]
    assert t.attr("permutation") == [0, 3, 1, 2] and t.output.uses()[0].op.op_type == "tanh"
    assert after.outputs["y"].producer.inputs[0].producer.op_type == "add"
    assert result.counts["transposes_before"] == 4 and result.counts["transposes_after"] == 1
    assert result.counts["transposes_merged"] == 3


def test_transposes_are_pushed_up_from_the_graphs_end():
    """x's transpose [2, 1, 0, 3] feeds, through a mean, an nhwc conv (converted at an nchw
    target, with a transpose in front) and an nchw one. Pushing up from the graph's last
    transpose first leaves only transposes of size-1 axes, which become reshapes: none is
    left. Pushing up from the first leaves one."""
    def build():
        b = GraphBuilder("up_order")
        x = b.input("x", "float32", [1, 2, 4, 3])
        m = b.reduceMean(b.transpose(x, permutation=[2, 1, 0, 3]), axes=[1],
                         keepDimensions=True)  # [4, 1, 1, 3]
        c = conv(b, b.relu(m), 3, 2, "nhwc", seed=1)
        y = conv(b, b.reduceMean(m, axes=[3], keepDimensions=True), 1, 1, "nchw", seed=2)
        return b.build({"y": y, "c": c})

    after, result = check_numbers(build, "nchw")
    assert "transpose" not in types(after)
    assert sorted(types(after)) == ["conv2d", "conv2d", "reduceMean", "reduceMean", "relu",
                                    "reshape", "reshape", "reshape"]
    assert all(op.attr("inputLayout") in (None, "nchw") for op in after.operations
               if op.op_type == "conv2d")
    assert result.counts["transposes_after"] == 0 and result.counts["pushed_up"] >= 1


def _output_and_reader(t_is_output: bool):
    """x -> s = transpose(x, [0, 2, 3, 1]) -> t = transpose(s, [0, 3, 1, 2]), read by relu (z);
    sigmoid(s) is w. t is the output y too, or (without) y is tanh(t)."""
    def build():
        b = GraphBuilder("output_and_reader")
        x = b.input("x", "float32", [2, 3, 4, 5])
        s = b.transpose(x, permutation=[0, 2, 3, 1])
        t = b.transpose(s, permutation=[0, 3, 1, 2])
        return b.build({"y": t if t_is_output else b.tanh(t), "z": b.relu(t),
                        "w": b.sigmoid(s)})
    return build


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_a_transpose_kept_for_an_output_is_not_copied_to_another_output(layout):
    """t stays for y whatever moves (y must be an op's result, and t composed with s is x, an
    input): taking it below relu as well would leave a copy for z, one transpose more (four,
    where the graph had two). relu reads t; only s goes down, below sigmoid, to w."""
    after, result = check_numbers(_output_and_reader(True), layout)
    assert types(after) == ["transpose", "transpose", "relu", "sigmoid", "transpose"]
    x, out = after.inputs["x"], after.outputs
    s, t, relu, sigmoid, w = after.operations
    assert (s.inputs[0], s.attr("permutation")) == (x, [0, 2, 3, 1])
    assert (t.inputs[0], t.attr("permutation")) == (s.output, [0, 3, 1, 2])
    assert out["y"] is t.output and relu.inputs[0] is t.output and out["z"] is relu.output
    assert sigmoid.inputs[0] is x
    assert (w.inputs[0], w.attr("permutation"), w.output) == (sigmoid.output, [0, 2, 3, 1],
                                                              out["w"])
    assert result.counts["transposes_before"] == 2 and result.counts["transposes_after"] == 3
    assert result.counts["pushed_down"] == 1


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_a_shared_transpose_no_output_holds_goes_down_to_the_outputs(layout):
    """The same graph with y = tanh(t): t is no output, so it goes below both its readers
    (each copy reaching an output), s then has no reader left but sigmoid, and s goes too."""
    after, result = check_numbers(_output_and_reader(False), layout)
    x = after.inputs["x"]
    assert sorted(types(after)) == ["relu", "sigmoid", "tanh", "transpose"]
    for name, op_type in (("y", "tanh"), ("z", "relu")):  # t's copy after each composes
        assert after.outputs[name].producer.op_type == op_type  # with s: cancelled
        assert after.outputs[name].producer.inputs[0] is x
    w = after.outputs["w"].producer
    assert w.attr("permutation") == [0, 2, 3, 1] and w.inputs[0].producer.inputs[0] is x
    assert result.counts["transposes_before"] == 2 and result.counts["transposes_after"] == 1


@pytest.mark.parametrize("end", ["output", "inverse"])
def test_a_transpose_kept_for_an_output_enters_a_region_only_to_be_cancelled(end):
    """t (an output) is also flattened into a one-group GroupNorm (an order-free region) whose
    reshape back is y, or is read by t's inverse for y. Passing the region leaves a copy of t
    after the reshape back: for y alone that copy would be a second transpose, so the region
    keeps reading t; the inverse cancels it, so the region reads x."""
    def build():
        b = GraphBuilder(f"region_{end}")
        x = b.input("x", "float32", [2, 4, 6, 5])
        t = b.transpose(x, permutation=[0, 2, 3, 1])
        normed = b.layerNormalization(b.reshape(t, [2, 1, 120]), axes=[2])
        back = b.reshape(normed, [2, 6, 5, 4])
        y = back if end == "output" else b.transpose(back, permutation=[0, 3, 1, 2])
        return b.build({"t": t, "y": y})

    after, result = check_numbers(build, "nhwc")
    t = after.outputs["t"].producer
    assert (t.inputs[0], t.attr("permutation")) == (after.inputs["x"], [0, 2, 3, 1])
    flatten = next(op for op in after.operations if op.op_type == "reshape")
    assert flatten.inputs[0] is (t.output if end == "output" else after.inputs["x"])
    assert after.outputs["y"].producer.op_type == "reshape"
    assert types(after).count("transpose") == 1
    assert result.counts["transposes_before"] == (1 if end == "output" else 2)
    assert result.counts.get("order_free_regions_passed", 0) == (0 if end == "output" else 1)
