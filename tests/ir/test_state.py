"""State declarations in the IR: what verify() checks about each pair, and initial values."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import GraphInvalidError
from converter.ir import ConstantData, Graph
from converter.ir.state import initial_value


def _graph() -> Graph:
    g = Graph("g")
    x = g.add_input("x", "float32", (2, 3))
    h = g.add_input("h", "float32", (2, 3))
    y = g.add_operation("add", [x, h], name="y").outputs[0]
    g.set_output("y", y)
    g.set_output("h/next", g.add_operation("tanh", [y], name="t").outputs[0])
    return g


def test_a_fitting_pair_is_valid_and_starts_at_its_initial_value():
    g = _graph()
    g.declare_state("h", "h/next", np.full((2, 3), 0.5, np.float32))
    assert g.problems() == []
    value = initial_value(g, g.state[0])
    np.testing.assert_array_equal(value, np.full((2, 3), 0.5, np.float32))
    value[0, 0] = 9  # a fresh array: the declaration is not changed through it
    assert g.state[0].initial.numpy()[0, 0] == 0.5
    g.state[0].initial = None
    assert g.state[0].initial_kind == "zeros"
    np.testing.assert_array_equal(initial_value(g, g.state[0]), np.zeros((2, 3), np.float32))


def test_every_broken_pair_is_listed():
    g = _graph()
    g.declare_state("h", "h/next", ConstantData("float32", (3,), fill=0.0))
    g.declare_state("h", "y")
    g.declare_state("missing", "h/next")
    assert g.problems() == [
        "state 'h' -> 'h/next': the initial value is float32[3], the state f32[2, 3]",
        "state 'h' -> 'y': input 'h' is the state of two pairs",
        "state 'missing' -> 'h/next': output 'h/next' is the next state of two pairs",
        "state 'missing' -> 'h/next': the graph has no input 'missing'",
    ]
    with pytest.raises(GraphInvalidError):
        g.verify()


def test_a_pass_that_changes_an_input_shape_breaks_the_pair_visibly():
    g = _graph()
    g.declare_state("h", "h/next")
    g.set_input_shape(g.inputs["h"], (3, 2))  # as a layout pass might, without its fix-up
    assert any("the input is f32[3, 2], the output f32[2, 3]" in p for p in g.problems())
