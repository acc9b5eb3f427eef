"""The layout pass's planning: where it moves a transpose when it has a choice, and how far its
look ahead follows one. Each case is a graph where a wrong cost or a wrong stopping rule still
computes the right numbers but leaves another count of transposes (or leaves them elsewhere),
so each asserts the exact ops left as well as the numbers against the graph before."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder

from .layout_helpers import check_numbers, conv, seeded, types

Q = [0, 3, 1, 2]  # c [2, 4, 5, 3] -> [2, 3, 4, 5]
P = [0, 2, 1, 3]  # the transpose read by matmul: composed with Q it is no identity
P_INVERSE_OF_Q = [0, 2, 3, 1]  # composed with Q: the identity


def _up(case):
    """transpose(add(a, transpose(c, Q)), p) read by a matmul, which stops it going down:
    moving it up costs one transpose for the input a, and one for c unless c's transposes
    compose to the identity, less the one it removes when transpose(c, Q) has no other reader."""
    def build():
        b = GraphBuilder(case)
        a = b.input("a", "float32", [2, 3, 4, 5])
        c = b.input("c", "float32", [2, 4, 5, 3])
        tq = b.transpose(c, permutation=Q)
        p = P_INVERSE_OF_Q if case.startswith("identity") else P
        if case == "two inputs":
            s = b.add(b.add(a, b.input("d", "float32", [2, 3, 4, 5])), tq)
        else:
            s = b.add(a, tq)
        w = b.constant(seeded((5, 2) if p == P else (3, 2), 1))
        outputs = {"y": b.matmul(b.transpose(s, permutation=p), w)}
        if case.endswith("shared"):
            outputs["q"] = tq
        return b.build(outputs)
    return build


@pytest.mark.parametrize("case,ops,inside", [
    # cost 1 (a) + 1 (c's two transposes compose to one, and transpose(c, Q) stays for q):
    # more than the one transpose it removes, so it stays
    ("shared", ["transpose", "add", "transpose", "matmul"], 1),
    # cost 1 (a) + 1 - 1 (transpose(c, Q) goes): it moves up to the inputs
    ("alone", ["transpose", "transpose", "add", "matmul"], 0),
    # cost 1 (a) + 0 (c's transposes cancel; transpose(c, Q) stays for q): it moves up
    ("identity shared", ["transpose", "transpose", "add", "matmul"], 0),
    # cost 1 (a) + 1 (d) + 0: two new transposes for the one removed, so it stays
    ("two inputs", ["transpose", "add", "add", "transpose", "matmul"], 1),
])
def test_pushing_up_counts_what_each_operand_costs(case, ops, inside):
    after, result = check_numbers(_up(case), "nhwc")
    assert sorted(types(after)) == sorted(ops)
    assert types(after) == ops or case == "identity shared"
    assert result.counts["transposes_after"] == ops.count("transpose")
    assert result.counts["transposes_after_inside"] == inside
    assert result.counts.get("pushed_up", 0) == (0 if inside else 1)


# -- how far the look ahead goes ---------------------------------------------------------------
LOOKAHEAD = 256  # layout_push._LOOKAHEAD: ops followed from the transpose's op


def _long_chain(kind: str, steps: int):
    """A transpose `steps` ops away from the graph input (and one reshape more), read by a
    matmul (up), or a transpose of the input shared by an output and a chain of `steps` ops
    after its first reader, ended by the inverse transpose (down)."""
    def build():
        b = GraphBuilder(f"{kind}_{steps}")
        x = b.input("x", "float32", [1, 4, 30] if kind == "reshape" else [1, 4, 6, 5])
        if kind == "down":
            t = b.transpose(x, permutation=[0, 2, 3, 1])
            value = b.relu(t)
            for _ in range(steps):
                value = b.relu(value)
            return b.build({"t": t, "y": b.transpose(value, permutation=[0, 3, 1, 2])})
        value = x
        for _ in range(steps):
            value = b.relu(value)
        if kind == "reshape":  # a reshape that moves its groups whole: one step
            value = b.reshape(value, [1, 4, 6, 5])
        if kind == "region":  # a one-group GroupNorm: an order-free region, one step
            normed = b.layerNormalization(b.reshape(value, [1, 1, 120]), axes=[2])
            value = b.reshape(normed, [1, 4, 6, 5])
        moved = b.transpose(value, permutation=[0, 2, 3, 1])
        return b.build({"y": b.matmul(moved, b.constant(seeded((4, 2), 3)))})
    return build


@pytest.mark.parametrize("kind,steps,moves", [
    ("unary", LOOKAHEAD, True), ("unary", LOOKAHEAD + 1, False),
    ("region", LOOKAHEAD - 1, True), ("region", LOOKAHEAD, False),
    ("reshape", LOOKAHEAD - 1, True), ("reshape", LOOKAHEAD, False),
])
def test_pushing_up_follows_at_most_the_look_ahead(kind, steps, moves):
    after, result = check_numbers(_long_chain(kind, steps), "nhwc")
    assert result.counts.get("pushed_up", 0) == (1 if moves else 0)
    assert result.counts["transposes_after"] == 1
    transpose = next(op for op in after.operations if op.op_type == "transpose")
    # moved: it reads the input; else it stays in front of the matmul
    assert (transpose.inputs[0] is after.inputs["x"]) == moves
    assert transpose.output.consumers()[0].op_type == ("relu" if moves else "matmul")


@pytest.mark.parametrize("steps,moves", [(LOOKAHEAD, True), (LOOKAHEAD + 1, False)])
def test_pushing_a_shared_transpose_down_looks_ahead_at_most_so_far(steps, moves):
    after, result = check_numbers(_long_chain("down", steps), "nhwc")
    # moved: the output t keeps its transpose and the copy cancels the chain's last one, so
    # the chain reads x; else the chain reads t and ends with its transpose
    assert result.counts["transposes_after"] == (1 if moves else 2)
    assert after.outputs["y"].producer.op_type == ("relu" if moves else "transpose")
    assert (after.operations[1].inputs[0] is after.inputs["x"]) == moves


# -- a layout-bearing op the look ahead or the push up meets -----------------------------------
def test_the_look_ahead_stops_at_a_resample_the_transpose_would_move_off_the_target_layout():
    """A shared transpose (also a graph output) read by relu, whose result a resample2d over
    the target's (nchw) spatial axes reads: taken through relu, the transpose would reach the
    resample, which would then resize axes [1, 2] (nhwc), so the look ahead refuses the push
    and nothing moves (no push down, no push up, no merge)."""
    def build():
        b = GraphBuilder("look_ahead_resample")
        x = b.input("x", "float32", [1, 4, 6, 5])
        t = b.transpose(x, permutation=[0, 3, 1, 2])
        y = b.resample2d(b.relu(t), mode="linear", scales=[2.0, 1.5], axes=[2, 3])
        return b.build({"t": t, "y": y})
    after, result = check_numbers(build, "nchw")
    assert types(after) == ["transpose", "relu", "resample2d"]
    assert [op.attr("axes") for op in after.operations if op.op_type == "resample2d"] == [[2, 3]]
    assert result.counts["transposes_after"] == 1
    for moved in ("pushed_down", "pushed_up", "duplicate_transposes_merged"):
        assert result.counts.get(moved, 0) == 0, moved


def test_the_look_ahead_of_a_transpose_no_output_holds_stops_at_the_resample_too():
    """As above, but the transpose is no graph output: tanh reads it too, and its copy there
    would cancel the inverse transpose after tanh. The look ahead goes on past relu to the
    resample2d, whose layout check refuses, so only tanh's copy goes down (and cancels); relu
    and the resample keep the transpose above them."""
    def build():
        b = GraphBuilder("look_ahead_resample_shared")
        x = b.input("x", "float32", [1, 4, 6, 5])
        t = b.transpose(x, permutation=[0, 3, 1, 2])
        y = b.resample2d(b.relu(t), mode="linear", scales=[2.0, 1.5], axes=[2, 3])
        u = b.transpose(b.tanh(t), permutation=[0, 2, 3, 1])
        return b.build({"u": b.sigmoid(u), "y": y})
    after, result = check_numbers(build, "nchw")
    assert types(after) == ["transpose", "relu", "resample2d", "tanh", "sigmoid"]
    transpose, relu, resample, tanh, _ = after.operations
    assert transpose.attr("permutation") == [0, 3, 1, 2] and transpose.inputs[0].name == "x"
    assert relu.inputs[0] is transpose.output and tanh.inputs[0].name == "x"
    assert resample.attr("axes") == [2, 3]
    assert (result.counts["transposes_before"], result.counts["transposes_after"]) == (2, 1)
    assert result.counts["pushed_down"] == 1 and result.counts.get("pushed_up", 0) == 0
    assert result.counts["transpose_pairs_cancelled"] == 1


def test_a_transpose_is_not_pushed_up_through_a_resample_it_would_move_off_the_target_layout():
    """transpose(resample2d(x) over nchw's spatial axes) read by matmul (which stops it going
    down): moving it above the resample would make that resample resize axes [1, 2], an nhwc
    resample on an nchw target, so it stays below it."""
    def build():
        b = GraphBuilder("push_up_resample")
        x = b.input("x", "float32", [1, 3, 4, 5])
        r = b.resample2d(x, mode="linear", scales=[2.0, 1.5], axes=[2, 3])
        t = b.transpose(r, permutation=[0, 2, 3, 1])
        return b.build({"y": b.matmul(t, b.constant(seeded((3, 2), 1)))})
    after, result = check_numbers(build, "nchw")
    assert types(after) == ["resample2d", "transpose", "matmul"]
    assert after.operations[0].attr("axes") == [2, 3]
    assert result.counts["transposes_after_inside"] == 1
    assert result.counts.get("pushed_up", 0) == 0


# -- names -------------------------------------------------------------------------------------
def test_rewritten_ops_keep_their_node_names_and_results_their_operand_names():
    def build():
        from .layout_helpers import cnn
        return cnn("nchw")

    after, _ = check_numbers(build, "nhwc")
    # each converted op keeps its node id; the flattening reshape (rewritten after the
    # transpose in front of it moved) still gives the operand named 'reshape', and the head's
    # result keeps 'gemm'
    names = {op.name: op.op_type for op in after.operations}
    for name, op_type in [("conv2d", "conv2d"), ("conv2d_1", "conv2d"), ("conv2d_2", "conv2d"),
                          ("maxPool2d", "maxPool2d"), ("averagePool2d", "averagePool2d")]:
        assert names[name] == op_type
    assert after.operand("reshape").producer.op_type == "reshape"
    assert after.operand("gemm") is after.outputs["y"]


def test_a_transpose_moved_up_hands_its_name_to_the_op_that_replaces_it():
    def build():
        b = GraphBuilder("named_up")
        a = b.input("a", "float32", [2, 3, 4, 5])
        c = b.input("c", "float32", [2, 4, 5, 3])
        s = b.add(a, b.transpose(c, permutation=Q))
        moved = b.transpose(s, permutation=P, name="moved")
        return b.build({"y": b.matmul(moved, b.constant(seeded((5, 2), 1)))})

    after, result = check_numbers(build, "nhwc")
    assert result.counts["pushed_up"] == 1
    matmul = next(op for op in after.operations if op.op_type == "matmul")
    assert matmul.inputs[0].name == "moved" and matmul.inputs[0].producer.op_type == "add"


# -- tidying -----------------------------------------------------------------------------------
def test_two_transposes_of_one_operand_by_one_permutation_merge_into_the_first():
    def build():
        b = GraphBuilder("duplicates")
        x = b.input("x", "float32", [2, 3, 4, 5])
        w = b.constant(seeded((3, 2), 1))
        first = b.matmul(b.transpose(x, permutation=[0, 2, 3, 1]), w)
        second = b.matmul(b.transpose(x, permutation=[0, 2, 3, 1]), w)
        return b.build({"y": first, "z": second})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "matmul", "matmul"]
    steps = {k: v for k, v in result.counts.items() if not k.startswith("transposes_")}
    assert steps == {"duplicate_transposes_merged": 1}


def test_a_transpose_nobody_reads_goes_and_is_counted():
    def build():
        b = GraphBuilder("dead")
        x = b.input("x", "float32", [1, 3, 6, 5])
        conv(b, x, 3, 4, "nchw")  # its result is read by nobody
        return b.build({"y": b.relu(x)})

    after, result = check_numbers(build, "nhwc")
    # the conv goes to nhwc between two transposes; the one after it is read by nobody
    assert types(after) == ["transpose", "conv2d", "relu"]
    assert result.counts["dead_transposes_removed"] == 1
    assert result.counts["transposes_after"] == 1


# -- the source layout of inputs and outputs ---------------------------------------------------
def test_source_layouts_compose_two_transposes_in_their_order():
    from converter.passes.layout import source_layouts

    # [1, 0, 2, 3] then [1, 3, 0, 2] is nhwc -> nchw; in the other order it is no layout
    b = GraphBuilder("two_transposes")
    x = b.input("x", "float32", [2, 5, 6, 3])
    t = b.transpose(b.transpose(x, permutation=[1, 0, 2, 3]), permutation=[1, 3, 0, 2])
    c = conv(b, t, 3, 4, "nchw")
    # and back: [1, 0, 2, 3] then [1, 2, 3, 0] is nchw -> nhwc
    y = b.transpose(b.transpose(c, permutation=[1, 0, 2, 3]), permutation=[1, 2, 3, 0])
    assert source_layouts(b.build({"y": y})) == ({"x": "nhwc"}, {"y": "nhwc"})


def test_source_layouts_stop_at_a_reshape_and_pass_missing_optional_operands():
    from converter.passes.layout import source_layouts

    b = GraphBuilder("stops")
    x = b.input("x", "float32", [1, 3, 6, 5])
    z = b.input("z", "float32", [1, 3, 5, 6])
    c = conv(b, b.add(x, b.reshape(z, [1, 3, 6, 5])), 3, 4, "nchw")
    normed = b.layerNormalization(c, axes=[1, 2, 3])  # no scale, no bias
    # a reshape may reorder elements: z's layout is not traced through it
    assert source_layouts(b.build({"y": normed})) == ({"x": "nchw", "z": None}, {"y": "nchw"})


@pytest.mark.parametrize("io", ["nchw", "nhwc"])
def test_an_interface_already_in_the_io_layout_is_not_presented_again(io):
    from .layout_helpers import cnn

    after, result = check_numbers(lambda: cnn(io, features=True), "nhwc", io=io)
    assert "inputs_presented" not in result.counts and "outputs_presented" not in result.counts
    assert "transposes_made_reshapes" not in result.counts
    assert after.inputs["x"].shape == ((1, 3, 9, 7) if io == "nchw" else (1, 9, 7, 3))
