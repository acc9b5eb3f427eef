"""What has no WebNN form is reported by name, all at once: other custom ops, several
subgraphs, control flow, ops without an equivalent (resource variables are state now:
test_variables.py)."""
from __future__ import annotations

import numpy as np

from converter.errors import UnsupportedError
from converter.testing.tflite_fixtures import Input, Output, Quant, TfliteBuilder, one_op

from .helpers import refused


def _stateful_model() -> bytes:
    """A wake-word-like model: CALL_ONCE runs an init subgraph, a resource variable holds
    state between invocations (both import, as state), while a TOPK_V2 and a custom op have no
    WebNN form."""
    b = TfliteBuilder()
    x = b.input("x", [1, 4])
    handle = b.tensor("handle", [], "int32")
    state = b.tensor("state", [1, 4])
    summed = b.tensor("summed", [1, 4])
    relu = b.tensor("relu", [1, 4])
    values = b.tensor("values", [1, 2])
    indices = b.tensor("indices", [1, 2], "int32")
    b.op("CALL_ONCE", [], [], initSubgraphIndex=1)
    b.op("VAR_HANDLE", [], [handle], sharedName="stream")
    b.op("READ_VARIABLE", [handle], [state])
    b.op("ADD", [x, state], [summed])
    b.op("ASSIGN_VARIABLE", [handle, summed], [])
    b.op("RELU", [summed], [relu])
    b.op("TOPK_V2", [relu, b.constant("k", np.array(2, np.int32))], [values, indices])
    b.op("CUSTOM:MyPostProcess", [relu], [b.tensor("post", [1, 4])])
    b.add_subgraph("init")
    h = b.tensor("init_handle", [], "int32")
    b.op("VAR_HANDLE", [], [h], sharedName="stream")
    b.op("ASSIGN_VARIABLE", [h, b.constant("zeros", np.zeros((1, 4), np.float32))], [])
    return b.build([values])


def test_everything_unsupported_is_listed_at_once_by_name():
    error = refused(_stateful_model())
    # the init subgraph, CALL_ONCE and the variable ops import (as state): not listed
    assert error.items == [
        "TOPK_V2 (op 6 -> 'values'): no WebNN equivalent",
        "CUSTOM:MyPostProcess (op 7 -> 'post'): a custom op: its kernel lives outside the model",
    ]
    assert "\n" not in error.line()


def test_independent_problems_are_all_reported():
    b = TfliteBuilder()
    x = b.input("x", [1, 4])
    values, indices = b.tensor("values", [1, 2]), b.tensor("indices", [1, 2], "int32")
    b.op("TOPK_V2", [x, b.constant("k", np.array(2, np.int32))], [values, indices])
    post = b.tensor("post", [1, 4])
    b.op("CUSTOM:MyPostProcess", [x], [post])
    for i in range(2):
        b.op("HASHTABLE", [], [b.tensor(f"h{i}", [], "int32")])
    error = refused(b.build([values, post]))
    assert error.items == [
        "TOPK_V2 (op 0 -> 'values'): no WebNN equivalent",
        "CUSTOM:MyPostProcess (op 1 -> 'post'): a custom op: its kernel lives outside the model",
        "HASHTABLE x2 (first op 2 -> 'h0'): hash tables have no WebNN form",
    ]


def test_while_is_control_flow():
    b = TfliteBuilder()
    x = b.input("x", [1])
    y = b.tensor("y", [1])
    b.op("WHILE", [x], [y], condSubgraphIndex=1, bodySubgraphIndex=2)
    for name in ("cond", "body"):
        b.add_subgraph(name)
    error = refused(b.build([y]))
    assert any(item.startswith("WHILE (op 0 -> 'y'): control flow") for item in error.items)
    assert error.items[0].startswith("3 subgraphs")


def test_a_rule_refusal_names_its_op_and_reason():
    model = one_op("SQUEEZE", [Input("x", [2, 1])], [Output("y", [2])], squeezeDims=[0])
    error = refused(model)
    assert isinstance(error, UnsupportedError)
    assert "SQUEEZE (op 0 -> 'y'): it squeezes dimensions [0] of [2, 1]" in error.items[0]


def test_an_op_without_its_options_table_is_refused():
    b = TfliteBuilder()
    x = b.input("x", [1, 4, 4, 1])
    y = b.tensor("y", [1, 2, 2, 1])
    b.op("MAX_POOL_2D", [x], [y])
    b.current.operators[-1].builtinOptionsType = 0  # strides and window sizes are missing
    b.current.operators[-1].builtinOptions = None
    error = refused(b.build([y]))
    assert error.items == ["MAX_POOL_2D (op 0 -> 'y'): it has no options table; MAX_POOL_2D "
                           "needs one"]


def test_the_fix_holds_for_reasons_that_are_not_missing_ops():
    """A refused type pair next to an op with no WebNN form: every reason is kept, and the fix
    does not call the type mismatch a missing form."""
    b = TfliteBuilder()
    x, d = b.input("x", [3, 3]), b.input("d", [3], "int8", Quant([0.5], [-7]))
    diag = b.tensor("diag", [3, 3])
    b.op("MATRIX_SET_DIAG", [x, d], [diag])
    values, indices = b.tensor("values", [3, 2]), b.tensor("indices", [3, 2], "int32")
    b.op("TOPK_V2", [x, b.constant("k", np.array(2, np.int32))], [values, indices])
    error = refused(b.build([diag, values]))
    assert error.items == [
        "MATRIX_SET_DIAG (op 0 -> 'diag'): its operand is float32 but its diagonal int8; "
        "give both the same type",
        "TOPK_V2 (op 1 -> 'values'): no WebNN equivalent",
    ]
    assert error.fix == ("change or remove each part named above (its reason says what stops "
                         "it); `webnn-convert ops` lists the WebNN ops with the data types and "
                         "ranks each takes")
    assert error.line().endswith("give both the same type; TOPK_V2 (op 1 -> 'values'): no "
                                 f"WebNN equivalent; {error.fix}")
