"""Attributes checked against the op's ONNX schema before its rule runs: a type other than the
declared one, a name the op does not have at the model's opset, a required one left out. Each
model here is one ONNX Runtime refuses too (its own words are checked first), and the import
refuses it as a FormatError naming the rule it breaks."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter.errors import FormatError

from .helpers import _import, check, rand, single_node

X = rand(1, 2, 4, 4)
W = rand(2, 2, 3, 3)


def _refused(model, feeds, ort_says: str, ours: str) -> None:
    with pytest.raises(Exception, match=ort_says):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(FormatError) as info:
        _import(model, feeds)
    assert ours in str(info.value) and "the model breaks an ONNX rule" in str(info.value)


@pytest.mark.parametrize("model, attribute, declared", [
    (single_node("Softmax", ["x"], {"x": X}, axis=1.0), "axis", "INT"),  # a whole float
    (single_node("Conv", ["x", "w"], {"x": X}, {"w": W}, group=1.0), "group", "INT"),
    (single_node("Conv", ["x", "w"], {"x": X}, {"w": W}, pads=[1.0, 1.0, 1.0, 1.0]), "pads",
     "INTS"),
    (single_node("LeakyRelu", ["x"], {"x": X}, alpha=1), "alpha", "FLOAT"),  # int for float
    (single_node("Transpose", ["x"], {"x": X}, perm="0123"), "perm", "INTS"),
])
def test_an_attribute_of_another_type_than_the_schema_declares(model, attribute, declared):
    got = {a.name: a.type for a in model.graph.node[0].attribute}[attribute]
    got_name = onnx.AttributeProto.AttributeType.Name(got)
    op = model.graph.node[0].op_type
    _refused(model, {"x": X}, f"Mismatched attribute type in ' : {attribute}'",
             f"attribute '{attribute}' has type {got_name}, but ONNX's {op} (opset 17) "
             f"declares {declared}")


def test_an_attribute_the_op_does_not_have():
    _refused(single_node("Relu", ["x"], {"x": X}, alpha=0.5), {"x": X},
             "Unrecognized attribute: alpha for operator Relu",
             "attribute 'alpha' is not one ONNX's Relu (opset 17) has")


def test_an_attribute_the_op_gained_at_a_later_opset():
    # Softmax-13's axis exists, but Reshape's allowzero only from opset 14
    shape = np.array([1, 32], np.int64)
    model = single_node("Reshape", ["x", "s"], {"x": X}, {"s": shape}, opset=13, allowzero=0)
    _refused(model, {"x": X}, "Unrecognized attribute: allowzero for operator Reshape",
             "attribute 'allowzero' is not one ONNX's Reshape (opset 13) has")
    check(single_node("Reshape", ["x", "s"], {"x": X}, {"s": shape}, opset=14, allowzero=0),
          {"x": X})  # at 14 the same node is valid and matches ONNX Runtime


def test_a_required_attribute_left_out():
    _refused(single_node("MaxPool", ["x"], {"x": X}), {"x": X},
             "Required attribute 'kernel_shape' is missing",
             "ONNX's MaxPool (opset 17) requires attribute 'kernel_shape', which the node does "
             "not set")


def test_attributes_as_declared_import_and_match_onnx_runtime():
    check(single_node("Conv", ["x", "w"], {"x": X}, {"w": W}, group=1, pads=[1, 1, 1, 1]),
          {"x": X})
    check(single_node("LeakyRelu", ["x"], {"x": X}, alpha=0.25), {"x": X})
