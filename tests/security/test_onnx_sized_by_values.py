"""Tiny ONNX files whose attribute or constant *values* size an allocation or a loop (a 300-byte
file asking for 2**31 of something): each is refused with one clear line before anything
allocates by that value, neither ONNX's own shape inference nor a rule of ours.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import converter
import converter.importers.onnx as onnx_importer
from converter.errors import ConverterError, FormatError, UnsupportedError

from .onnx_cases import convert_refused, model, vi, write

BIG = 2 ** 31


def _no_inference(monkeypatch) -> list:
    """Make ONNX's whole-model inference record that it was started (it never should be)."""
    started = []
    monkeypatch.setattr(onnx_importer, "start_inference",
                        lambda *args, **kwargs: started.append(args) or None)
    return started


def _split(num_outputs: int):
    return helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=num_outputs)


def test_split_num_outputs_is_checked_before_onnx_inference(tmp_path, monkeypatch):
    src = write(model([_split(BIG), helper.make_node("Relu", ["x"], ["y"])],
                      [vi("x", shape=[4, 3])], [vi("y", shape=[4, 3])], opset=18), tmp_path)
    started = _no_inference(monkeypatch)
    with pytest.raises(FormatError) as e:
        converter.load(src)
    assert started == []
    assert "Split 'Split_0': num_outputs is 2147483648 but the node has 2 outputs" in str(e.value)
    assert e.value.fix == "the model breaks an ONNX rule; fix or re-export it"


def test_split_num_outputs_in_a_branch_is_checked_before_onnx_inference(tmp_path, monkeypatch):
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"]), _split(-3)], "then", [],
                             [vi("t", shape=[4, 3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [vi("e", shape=[4, 3])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    src = write(model([helper.make_node("If", ["cond"], ["y"], then_branch=then,
                                        else_branch=other)],
                      [vi("x", shape=[4, 3])], [vi("y", shape=[4, 3])], [cond], opset=18),
                tmp_path)
    started = _no_inference(monkeypatch)
    with pytest.raises(FormatError, match="Split 'Split_1': num_outputs is -3 but the node "
                                          "has 2 outputs"):
        converter.load(src)
    assert started == []


def test_split_num_outputs_equal_to_the_outputs_converts(tmp_path):
    src = write(model([_split(2), helper.make_node("Concat", ["b", "a"], ["y"], axis=0)],
                      [vi("x", shape=[4, 3])], [vi("y", shape=[4, 3])], opset=18), tmp_path)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = converter.run(converter.load(src), {"x": x})["y"]
    np.testing.assert_array_equal(y, np.concatenate([x[2:], x[:2]]))
