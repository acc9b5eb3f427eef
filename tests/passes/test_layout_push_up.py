"""When the layout pass moves a transpose up to the graph input, and when it leaves it: the
transposes in front of a matmul (which stops them going down) on graphs where the only
difference is what else reads the operands on the way up. Exact ops, and the numbers against
the graph before."""
from __future__ import annotations

import pytest

from converter.ops.builder import GraphBuilder

from .layout_helpers import check_numbers, seeded, types

P = [0, 2, 3, 1]


def _graph(case):
    def build():
        b = GraphBuilder(case.replace(" ", "_"))
        a = b.input("a", "float32", [2, 3, 4, 5])
        w, w2 = b.constant(seeded((3, 2), 1)), b.constant(seeded((3, 2), 2))
        if case == "two permutations":  # x read by transposes by two permutations
            x = b.relu(a)
            return b.build({"y": b.matmul(b.transpose(x, permutation=P), w),
                            "z": b.matmul(b.transpose(x, permutation=[0, 3, 2, 1]), w2)})
        if case == "two alike":  # x read by two transposes by one permutation
            x = b.relu(a)
            return b.build({"y": b.matmul(b.transpose(x, permutation=P), w),
                            "z": b.matmul(b.transpose(x, permutation=P), w2)})
        if case == "shared operand":  # relu(b) is also an output: it would have to stay
            r = b.relu(b.input("b", "float32", [2, 3, 4, 5]))
            s = b.add(b.constant(seeded((2, 3, 4, 5), 3)), r)
            return b.build({"y": b.matmul(b.transpose(s, permutation=P), w), "z": r})
        # an operand the permutation leaves alone (a [1] input) costs nothing
        s = b.add(a, b.input("s", "float32", [1]))
        return b.build({"y": b.matmul(b.transpose(s, permutation=P), w)})
    return build


EXPECTED = {
    "two permutations": (["relu", "transpose", "matmul", "transpose", "matmul"], 0),
    "two alike": (["transpose", "relu", "matmul", "matmul"], 1),
    "shared operand": (["relu", "add", "transpose", "matmul"], 0),
    "invariant operand": (["transpose", "add", "matmul"], 1),
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_transpose_moves_up_only_when_every_reader_and_operand_allows_it(case):
    after, result = check_numbers(_graph(case), "nhwc")
    ops, pushed = EXPECTED[case]
    assert types(after) == ops
    assert result.counts.get("pushed_up", 0) == pushed
    assert "duplicate_transposes_merged" not in result.counts
    assert result.counts["transposes_after_inside"] == (0 if pushed else ops.count("transpose"))


# -- pushing a shared transpose down: the look ahead at a transpose ----------------------------
def _shared(case):
    def build():
        b = GraphBuilder(case.replace(" ", "_"))
        x = b.input("x", "float32", [2, 3, 4, 5])
        t = b.transpose(x, permutation=P)  # shared: it is also the output t
        r = b.relu(t)
        if case == "stays":  # [0, 2, 1, 3] after P: no cancellation
            return b.build({"t": t, "y": b.transpose(r, permutation=[0, 2, 1, 3])})
        back = b.transpose(r, permutation=[0, 3, 1, 2])  # P's inverse
        if case == "cancels before a matmul":
            back = b.matmul(back, b.constant(seeded((5, 2), 1)))
        return b.build({"t": t, "y": back})
    return build


@pytest.mark.parametrize("case,relu_reads_x,steps", [
    ("cancels", True, {"pushed_down": 1, "transpose_pairs_cancelled": 1}),
    ("cancels before a matmul", True, {"pushed_down": 1, "transpose_pairs_cancelled": 1}),
    ("stays", False, {}),
])
def test_a_shared_transpose_goes_down_only_to_meet_its_inverse(case, relu_reads_x, steps):
    after, result = check_numbers(_shared(case), "nhwc")
    relu = next(op for op in after.operations if op.op_type == "relu")
    assert (relu.inputs[0] is after.inputs["x"]) == relu_reads_x
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == steps
    assert result.counts["transposes_after"] == (1 if relu_reads_x else 2)


# -- pushing down: operands of a higher rank, and ops with two results -------------------------
def test_a_transpose_goes_down_an_add_with_an_operand_of_higher_rank():
    def build():
        b = GraphBuilder("higher_rank")
        x = b.input("x", "float32", [2, 4, 5])
        z = b.constant(seeded((3, 2, 5, 4), 1))  # broadcast against transpose(x): [2, 5, 4]
        return b.build({"y": b.add(b.transpose(x, permutation=[0, 2, 1]), z)})

    after, result = check_numbers(build, "nhwc")
    # the add works on x and z re-laid out; one transpose of its rank-4 result leaves
    assert types(after) == ["add", "transpose"]
    add, transpose = after.operations
    assert add.inputs[0] is after.inputs["x"] and add.inputs[1].shape == (3, 2, 4, 5)
    assert transpose.attr("permutation") == [0, 1, 3, 2]


def test_a_transpose_goes_down_a_split_only_when_each_result_can_take_it_on():
    def build(ends):
        def graph():
            b = GraphBuilder(f"split_{ends}")
            x = b.input("x", "float32", [2, 3, 4, 6])
            left, right = b.split(b.transpose(x, permutation=[0, 3, 1, 2]), 2, axis=1)
            if ends == "matmul":  # each half read by a matmul: a transpose would stay there
                w = b.constant(seeded((4, 2), 1))
                return b.build({"y": b.matmul(left, w), "z": b.matmul(right, w)})
            return b.build({"y": b.relu(left), "z": b.sigmoid(right)})
        return graph

    after, result = check_numbers(build("matmul"), "nhwc")
    assert types(after) == ["transpose", "split", "matmul", "matmul"]
    after, result = check_numbers(build("outputs"), "nhwc")
    assert types(after) == ["split", "relu", "transpose", "sigmoid", "transpose"]
    assert next(op for op in after.operations if op.op_type == "split").attr("axis") == 3


def test_the_look_ahead_asks_each_reader_about_its_own_slots_only():
    # relu(t) is read by sigmoid (one operand) and as the second operand of an add: each
    # reader takes the transpose on, so the shared t (an output, which keeps it) goes down
    # and each copy cancels the inverse transpose after its reader
    def build():
        b = GraphBuilder("slots")
        x = b.input("x", "float32", [2, 3, 4, 5])
        t = b.transpose(x, permutation=[0, 2, 3, 1])
        r = b.relu(t)
        back = [0, 3, 1, 2]
        return b.build({"t": t, "y": b.transpose(b.sigmoid(r), permutation=back),
                        "z": b.transpose(b.add(b.constant(seeded((2, 4, 5, 3), 1)), r),
                                         permutation=back)})

    after, result = check_numbers(build, "nhwc")
    assert types(after) == ["transpose", "relu", "sigmoid", "add"]
    assert next(op for op in after.operations if op.op_type == "relu").inputs[0] is \
        after.inputs["x"]
    assert after.outputs["z"].producer.inputs[0].shape == (2, 3, 4, 5)  # the constant
    tallies = ("transposes_before", "transposes_after")
    assert {k: v for k, v in result.counts.items() if not k.startswith(tallies)} == \
        {"constants_transposed": 1, "pushed_down": 3, "transpose_pairs_cancelled": 2}
    assert result.counts["transposes_before"] == 3 and result.counts["transposes_after"] == 1
