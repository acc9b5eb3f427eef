"""Re-laid filters are views of their source until written: the layout pass copies no weight,
and the `.webnn` writer lays the bytes out (one tensor at a time) as the transpose says."""
from __future__ import annotations

import numpy as np

import converter

from .layout_helpers import cnn, layout_pass


def test_a_relaid_filter_shares_its_sources_memory(tmp_path):
    graph = cnn("nhwc")
    source = graph.operations[0].inputs[1].constant.numpy()  # hwio [3, 3, 3, 8]
    expected = source.copy().transpose(3, 2, 0, 1)  # hwio -> oihw, computed by numpy
    layout_pass(graph, "nchw")
    first = next(op for op in graph.operations if op.op_type == "conv2d")
    relaid = first.inputs[1].constant.numpy()
    assert np.shares_memory(relaid, source)  # no copy was made by the pass
    np.testing.assert_array_equal(relaid, expected)
    converter.save(graph, tmp_path / "g.webnn")
    back = converter.load(tmp_path / "g.webnn")
    filt = next(op for op in back.operations if op.op_type == "conv2d").inputs[1]
    assert filt.shape == (8, 3, 3, 3)
    np.testing.assert_array_equal(filt.constant.numpy(), expected)
