"""Malformed models are refused in one line, never an internal error or a wrong graph: an
operator listing more or fewer outputs than its op has, whichever family its rule is in; a
sparse constant that is a graph output itself."""
from __future__ import annotations

import numpy as np
import pytest

from converter.testing.tflite_fixtures import (TfliteBuilder, flexbuffer_map, pool_params,
                                               sparse_parameters)

from .helpers import refused


@pytest.mark.parametrize("code, shape, outputs, options", [
    ("RELU", [2, 3], 2, None),
    ("COMPLEX_ABS", None, 2, None),
    ("CUSTOM:MaxPoolingWithArgmax2D", [1, 4, 4, 1], 1, pool_params(2, 2, 2, 2, 2)),
    ("CUSTOM:TransformLandmarks", [1, 5, 3], 2, flexbuffer_map({})),
])
def test_an_operator_with_the_wrong_number_of_outputs_is_refused(code, shape, outputs, options):
    b = TfliteBuilder()
    if code == "COMPLEX_ABS":  # its input is RFFT2D's complex result
        x = b.input("x", [4, 8])
        z = b.tensor("z", [4, 5], "complex64")
        b.op("RFFT2D", [x, b.constant("n", np.array([4, 8], np.int32))], [z])
        inputs, out_shape = [z], [4, 5]
    else:
        inputs, out_shape = [b.input("x", shape)], shape
        if code == "CUSTOM:TransformLandmarks":
            inputs.append(b.input("matrix", [1, 4, 4]))
    ys = [b.tensor(f"y{k}", out_shape) for k in range(outputs)]
    b.op(code, inputs, ys, custom_options=options, version=2 if "Landmarks" in code else 1)
    message = refused(b.build(ys[:1])).line()
    assert f"{code} (op " in message and f"it lists {outputs} outputs; {code} has" in message


def test_a_sparse_constant_as_a_graph_output_is_refused_not_read_as_nan():
    sparsity, stored = sparse_parameters(np.eye(4, dtype=np.float32))
    b = TfliteBuilder()
    b.input("x", [4])
    w = b.constant("w", np.eye(4, dtype=np.float32), sparsity=sparsity, stored=stored)
    assert "output 'w' is a sparse constant; only DENSIFY reads one" in str(refused(b.build([w])))
