"""Graph inputs: shapes as stored or given, values fixed at conversion time, and the graph's
names (inputs and outputs keep the model's tensor names)."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import ConverterError
from converter.runtimes.execute import run
from converter.importers.tflite import import_tflite
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import SAME, Const, Input, Output, one_op

from .helpers import rand


def _conv() -> bytes:
    return one_op("CONV_2D", [Input("serving_default_x:0", [1, 4, 4, 3]), Const(rand(2, 3, 3, 3)),
                              Const(rand(2))], [Output("StatefulPartitionedCall:0", [1, 4, 4, 2])],
                  padding=SAME, strideW=1, strideH=1)


def test_inputs_and_outputs_keep_the_tensor_names():
    graph = import_tflite(_conv())
    assert list(graph.inputs) == ["serving_default_x:0"]
    assert list(graph.outputs) == ["StatefulPartitionedCall:0"]
    assert graph.inputs["serving_default_x:0"].shape == (1, 4, 4, 3)


def test_an_input_shape_given_replaces_the_stored_one():
    model = _conv()
    graph = import_tflite(model, input_shapes={"serving_default_x:0": [2, 7, 5, 3]})
    assert graph.outputs["StatefulPartitionedCall:0"].shape == (2, 7, 5, 2)
    x = rand(2, 7, 5, 3)
    want = run_litert(model, {"serving_default_x:0": x})  # LiteRT resizes to the feed
    got = run(graph, {"serving_default_x:0": x})
    np.testing.assert_allclose(got["StatefulPartitionedCall:0"],
                               want["StatefulPartitionedCall:0"], atol=1e-5)


@pytest.mark.parametrize("shapes, message", [
    ({"nope": [1, 2, 2, 3]}, "'nope', which is not a graph input; inputs are: serving_default"),
    ({"serving_default_x:0": [4, 3]}, "has rank 4; the shape given has 2 dimensions"),
])
def test_wrong_input_shapes_are_one_line(shapes, message):
    with pytest.raises(ConverterError) as info:
        import_tflite(_conv(), input_shapes=shapes)
    assert message in info.value.line()


def test_an_input_fixed_at_conversion_time_becomes_a_constant():
    # RESHAPE's shape comes from a graph input: WebNN needs it as a plain list.
    model = one_op("RESHAPE", [Input("x", [2, 3]), Input("shape", [2], "int32")],
                   [Output("y", [3, 2])])
    with pytest.raises(ConverterError, match="must be known at conversion time"):
        import_tflite(model)
    graph = import_tflite(model, known_inputs={"shape": np.array([3, 2])})
    assert list(graph.inputs) == ["x"]
    got = run(graph, {"x": np.arange(6, dtype=np.float32).reshape(2, 3)})
    np.testing.assert_array_equal(got["y"], [[0, 1], [2, 3], [4, 5]])
