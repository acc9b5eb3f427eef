"""run_litert: the reference runtime for TFLite sources."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import ConverterError
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import Const, Input, Output, TfliteBuilder, one_op


def _add() -> bytes:
    return one_op("ADD", [Input("a", [2, 2]), Const(np.array([1, 2], np.float32))],
                  [Output("sum", [2, 2])])


def test_outputs_are_keyed_by_tensor_name(tmp_path):
    path = tmp_path / "add.tflite"
    path.write_bytes(_add())
    out = run_litert(path, {"a": np.zeros((2, 2), np.float32)})
    assert list(out) == ["sum"]
    np.testing.assert_array_equal(out["sum"], [[1, 2], [1, 2]])


def test_every_feed_problem_in_one_error():
    with pytest.raises(ConverterError) as info:
        run_litert(_add(), {"a": np.zeros((2, 2), np.int32), "b": np.zeros(1)})
    line = info.value.line()
    assert "input 'a' is float32, the feed is numpy int32" in line
    assert "'b' is not an input of the model (inputs: a)" in line


def test_bool_inputs_take_uint8_and_other_shapes_resize():
    model = one_op("LOGICAL_NOT", [Input("m", [2], "bool")], [Output("y", [2], "bool")])
    out = run_litert(model, {"m": np.array([1, 0, 1], np.uint8)})
    np.testing.assert_array_equal(out["y"], [False, True, False])


def test_intermediate_tensors_on_request():
    b = TfliteBuilder()
    x = b.input("x", [3])
    mid, y = b.tensor("mid", [3]), b.tensor("y", [3])
    b.op("RELU", [x], [mid])
    b.op("NEG", [mid], [y])
    out = run_litert(b.build([y]), {"x": np.array([-1, 0, 2], np.float32)}, tensors=["mid"])
    np.testing.assert_array_equal(out["mid"], [0, 0, 2])
    np.testing.assert_array_equal(out["y"], [0, 0, -2])


def test_a_model_litert_cannot_load_is_one_line():
    model = one_op("CUSTOM:NoSuchKernel", [Input("x", [2])], [Output("y", [2])])
    with pytest.raises(ConverterError) as info:
        run_litert(model, {"x": np.zeros(2, np.float32)})
    line = info.value.line()
    # a custom op without a kernel: no source runtime can judge the model (NoSourceRuntimeError)
    assert line.startswith("<tflite bytes>: LiteRT has no kernel for the model's custom op ") \
        and "\n" not in line
    assert "NoSuchKernel" in line
