"""What the ONNX indexing rules refuse, each with its reason (GatherND's batch_dims, a scatter
reduction ONNX does not define, ReverseSequence's axes and lengths, OneHot's depth and values,
Compress past its axis or selecting nothing, TopK's k range and limit), and one corner beside
those checks: TopK-1's k attribute, against ONNX Runtime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from .helpers import check, rand, refused, single_node

I64 = np.int64
X, X300 = rand(2, 3), rand(1, 300)


@pytest.mark.parametrize("model, feeds, reason", [
    (single_node("GatherND", ["x", "i"], {"x": X}, {"i": np.zeros((3, 1), I64)}, batch_dims=1),
     {"x": X}, "batch_dims 1 does not fit data [2, 3] and indices [3, 1]"),
    (single_node("ScatterElements", ["x", "i", "u"], {"x": X},
                 {"i": np.zeros((1, 3), I64), "u": rand(1, 3)}, opset=18, reduction="avg"),
     {"x": X}, "reduction 'avg' is not one ONNX defines"),
    (single_node("ReverseSequence", ["x", "l"], {"x": X}, {"l": np.array([1, 1], I64)},
                 opset=10, time_axis=0, batch_axis=0), {"x": X},
     "time_axis and batch_axis must be 0 and 1"),
    (single_node("ReverseSequence", ["x", "l"], {"x": X}, {"l": np.array([1, 1, 4], I64)},
                 opset=10, time_axis=0, batch_axis=1), {"x": X},
     "sequence_lens [1, 1, 4] do not fit 3 sequences of 2 steps"),
    (single_node("OneHot", ["i", "d", "v"], {"i": np.array([0, 1], I64)},
                 {"d": np.array(2.5, np.float32), "v": np.array([0, 1], np.float32)},
                 out_types=[1]), {"i": np.array([0, 1], I64)},
     "depth 2.5 is not a positive integer"),
    (single_node("OneHot", ["i", "d", "v"], {"i": np.array([0, 1], I64)},
                 {"d": np.array(3, I64), "v": np.array([0, 1, 2], np.float32)},
                 out_types=[1]), {"i": np.array([0, 1], I64)},
     "values must hold [off, on], it has 3 elements"),
    (single_node("OneHot", ["i", "d", "v"], {"i": np.array([0, 1], I64),
                                              "v": np.array([0, 1, 2], np.float32)},
                 {"d": np.array(3, I64)}, out_types=[1]),
     {"i": np.array([0, 1], I64), "v": np.array([0, 1, 2], np.float32)},
     "values must have shape [2], it has [3]"),
    (single_node("Compress", ["x", "c"], {"x": X}, {"c": np.array([1, 0, 0, 1], np.bool_)},
                 axis=0), {"x": X}, "condition selects positions past axis 0's size 2"),
    # k past the axis breaks an ONNX rule (tests/security/test_onnx_sized_by_values.py); k = 0
    # is ONNX's empty result, which WebNN cannot hold.
    (single_node("TopK", ["x", "k"], {"x": X}, {"k": np.array([0], I64)},
                 outputs=("v", "i"), out_types=[1, 7]), {"x": X},
     "k=0 is outside 1..3, the length of axis 1"),
    (single_node("TopK", ["x", "k"], {"x": X300}, {"k": np.array([257], I64)},
                 outputs=("v", "i"), out_types=[1, 7]), {"x": X300}, "k=257 is more than 256"),
])
def test_indexing_refusals(model, feeds, reason):
    assert reason in refused(model, feeds)


def test_compress_selecting_nothing_is_an_empty_axis_webnn_cannot_output():
    model = single_node("Compress", ["x", "c"], {"x": X}, {"c": np.array([0, 0], np.bool_)},
                        axis=0)
    assert "'y' has shape [0, 3], with a 0 dimension" in refused(model, {"x": X})


def test_top_k_opset_1_takes_k_as_an_attribute():
    x = np.array([[3, 1, 4, 1, 5]], np.float32)
    model = single_node("TopK", ["x"], {"x": x}, outputs=("v", "i"), out_types=[1, 7],
                        opset=1, k=2)
    _, (v, i) = check(model, {"x": x})
    np.testing.assert_array_equal(v, [[5, 4]])
    np.testing.assert_array_equal(i, [[4, 2]])
