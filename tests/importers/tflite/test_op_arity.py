"""An operator listing more or fewer outputs than its op has (a malformed model) is refused in
one line naming the op, whichever family its rule is in: never an internal error."""
from __future__ import annotations

import numpy as np
import pytest

from converter.testing.tflite_fixtures import TfliteBuilder, flexbuffer_map, pool_params

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
