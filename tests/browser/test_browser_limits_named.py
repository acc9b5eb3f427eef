"""`verify --runtime chromium` on a graph converted without --target: when the browser refuses
it for one of its own limits (uint4 weights, int64 scatter indices), the one error line names
the tensor that breaks it and says to add --target chromium-litert, with which it passes.
(It named the op the build reached, and said nothing of the target.)"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from cli.main import main
from tests.verification.test_dtype_forms import nbits_model


def _scatter(path):
    node = H.make_node("ScatterND", ["x", "idx", "u"], ["y"])
    graph = H.make_graph([node], "g", [H.make_tensor_value_info("x", TP.FLOAT, [4, 3]),
                                       H.make_tensor_value_info("u", TP.FLOAT, [2, 3])],
                         [H.make_tensor_value_info("y", TP.FLOAT, [4, 3])],
                         [nh.from_array(np.array([[1], [3]], np.int64), "idx")])
    onnx.save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17)]), str(path))


@pytest.mark.parametrize("make, names", [
    (lambda p: nbits_model(p, 4), ("graph constant 'MatMulNBits_0_const'", "data type uint4")),
    (_scatter, ("scatterND 'ScatterND_0/scatterND'", "its indices 'idx': data type int64")),
])
def test_the_browser_limit_a_graph_breaks_is_named_with_the_target_that_fits_it(
        browser_limits, tmp_path, make, names):
    path = tmp_path / "m.onnx"
    make(path)
    refused = CliRunner().invoke(main, ["verify", str(path), "--runtime", "chromium"])
    assert refused.exit_code == 2, refused.output
    (line,) = [x for x in refused.output.splitlines() if x.startswith("error:")]
    assert all(name in line for name in names), line
    assert "--target chromium-litert" in line
    fitted = CliRunner().invoke(main, ["verify", str(path), "--runtime", "chromium",
                                       "--target", "chromium-litert"])
    assert fitted.exit_code == 0, fitted.output
