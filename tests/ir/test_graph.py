"""The IR core: operands, ordered uses, editing, and naming."""
import numpy as np
import pytest

from converter import ConverterError, GraphBuilder
from converter.ir import ConstantData, Graph, Use


def _chain():
    b = GraphBuilder("chain")
    x = b.input("x", "float32", [2, 3])
    c = b.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="c")
    s = b.add(x, c, name="s")
    m = b.mul(s, s, name="m")
    return b, x, c, s, m


def test_uses_are_ordered_and_slot_aware():
    b, x, c, s, m = _chain()
    # mul reads s in both slots: two uses, in slot order.
    assert s.uses() == (Use(m.producer, 0), Use(m.producer, 1))
    assert s.consumers() == [m.producer]
    assert x.uses() == (Use(s.producer, 0),) and c.uses() == (Use(s.producer, 1),)
    assert s.producer.op_type == "add" and s.index == 0


def test_replace_all_uses_moves_every_slot():
    b, x, c, s, m = _chain()
    g = b.graph
    s.replace_all_uses_with(x)
    assert m.producer.inputs == [x, x]
    assert s.uses() == ()
    assert [u.index for u in x.uses()] == [0, 0, 1]
    g.remove_operation(s.producer)
    g.set_output("m", m)
    assert g.verify() is g and [op.name for op in g.operations] == ["m"]


def test_replace_graph_outputs_only_when_asked():
    b, x, c, s, m = _chain()
    g = b.build({"out": m})
    n = g.add_operation("neg", [m]).output
    m.replace_all_uses_with(x)  # neg now reads x; the output still names m
    assert n.producer.inputs == [x] and g.outputs["out"] is m
    m.replace_all_uses_with(n, replace_graph_outputs=True)
    assert g.outputs["out"] is n


def test_remove_operation_refuses_while_used():
    b, x, c, s, m = _chain()
    with pytest.raises(ConverterError, match="still used"):
        b.graph.remove_operation(s.producer)


def test_insert_before_keeps_topological_order():
    b, x, c, s, m = _chain()
    g = b.graph
    n = g.add_operation("neg", [x], before=s.producer, name="n")
    assert [op.name for op in g.operations] == ["n", "s", "m"]
    s.producer.replace_input(0, n.output)
    g.set_output("m", m)
    g.verify()


def test_fresh_names_never_collide():
    g = Graph()
    g.add_input("add", "float32", [1])
    names = {g.add_operation("add", [g.operand("add"), g.operand("add")]).name for _ in range(3)}
    assert len(names) == 3 and "add" not in names


def test_duplicate_input_name_is_rejected():
    g = Graph()
    g.add_input("x", "float32", [1])
    with pytest.raises(ConverterError, match="duplicate name 'x'"):
        g.add_input("x", "float32", [1])


@pytest.mark.parametrize("shape, message", [
    ([0, 3], "must be greater than 0"),
    ([-1], "must be greater than 0"),
    ([2**32], "exceeds"),
    ([65536, 65536], "more than the spec's limit"),
    (["N", 3], "not an integer"),
])
def test_invalid_shapes_are_rejected(shape, message):
    with pytest.raises(ConverterError, match=message):
        Graph().add_input("x", "float32", shape)


def test_constants_are_views_not_copies():
    weights = np.arange(12, dtype=np.float32)
    g = Graph()
    c = g.add_constant("w", ConstantData("float32", (3, 4), array=weights))
    assert np.shares_memory(c.constant.numpy(), weights)
    assert np.shares_memory(np.frombuffer(c.constant.raw_bytes(), np.float32), weights)


def test_scalar_fill_constant_broadcasts_without_memory():
    data = ConstantData("float16", (1000, 1000), fill=0.5)
    arr = data.numpy()
    assert arr.shape == (1000, 1000) and arr.dtype == np.float16 and arr[999, 999] == 0.5
    assert arr.strides == (0, 0)  # a broadcast view, not a million elements
    assert data.nbytes == 2_000_000


def test_int4_packs_low_nibble_first():
    b = GraphBuilder()
    c = b.constant("int4", [3], [-8, 7, -1])
    # -8 -> 0x8, 7 -> 0x7 in the high nibble, -1 -> 0xF: bytes 0x78, 0x0F.
    assert bytes(c.constant.raw_bytes()) == bytes([0x78, 0x0F])
    assert c.constant.numpy().tolist() == [-8, 7, -1]
    u = b.constant("uint4", [2], [1, 15])
    assert bytes(u.constant.raw_bytes()) == bytes([0xF1])


def test_builder_scalar_and_descriptor_constants():
    b = GraphBuilder()
    s = b.constant("float32", 2.5)
    d = b.constant({"dataType": "int32", "shape": [2]}, np.array([1, 2], np.int32).tobytes())
    assert s.shape == () and float(s.constant.numpy()) == 2.5
    assert d.constant.numpy().tolist() == [1, 2]


def test_build_twice_is_an_error():
    b = GraphBuilder()
    x = b.input("x", "float32", [1])
    b.build({"y": b.abs(x)})
    with pytest.raises(ConverterError, match="already called"):
        b.build({"y": x})


def test_networkx_view_keeps_slots():
    b, x, c, s, m = _chain()
    g = b.graph.to_networkx()
    assert sorted(k for _, _, k in g.edges(keys=True)) == [0, 1]


def test_sort_restores_topological_order_and_keeps_valid_order():
    b, x, c, s, m = _chain()
    g = b.graph
    n = g.add_operation("neg", [m], name="n")
    g.set_output("n", n.output)
    g.operations = [g.operations[2], g.operations[1], g.operations[0]]  # n, m, s: reversed
    assert g.problems()
    g.sort()
    assert [op.name for op in g.operations] == ["s", "m", "n"] and not g.problems()
    independent = g.add_operation("abs", [x], name="a")  # appended last, but needs only x
    g.set_output("a", independent.output)
    g.sort()
    assert [op.name for op in g.operations] == ["s", "m", "n", "a"]  # stable: stays last


def test_sort_names_a_cycle():
    b, x, c, s, m = _chain()
    g = b.graph
    g.set_output("m", m)
    s.producer.replace_input(0, m)  # s reads m, m reads s
    with pytest.raises(ConverterError, match="cycle"):
        g.sort()


def test_remove_unused_drops_dead_ops_and_constants_not_inputs():
    b, x, c, s, m = _chain()
    g = b.graph
    g.set_output("s", s)  # m is dead
    extra = g.add_constant("unused", np.zeros(3, np.float32))
    assert g.remove_unused() == 1
    assert [op.name for op in g.operations] == ["s"] and "unused" not in g.constants
    assert extra.graph is None and "x" in g.inputs and "c" in g.constants


def test_the_ir_alone_says_how_to_load_the_op_catalogue():
    """ir does not import ops (the layers): without the catalogue, adding an operation is one
    clear error, and the public converter.Graph loads it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("from converter.ir import Graph\n"
            "g = Graph('g'); x = g.add_input('x', 'float32', [2])\n"
            "try:\n    g.add_operation('relu', [x])\n"
            "except Exception as e:\n    print(type(e).__name__, e.line())\n"
            "import converter\n"
            "g = converter.Graph('g'); x = g.add_input('x', 'float32', [2])\n"
            "print(g.add_operation('relu', [x]).outputs[0].shape)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env={"PYTHONPATH": str(root), "PATH": ""}, timeout=120)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first.startswith("ConverterError ") and "import converter.ops" in first
    assert second == "(2,)"
