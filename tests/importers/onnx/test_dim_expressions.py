"""Dims named by expressions (importers/onnx/dim_expressions.py): parsed from the model's
text, never evaluated as Python."""
from __future__ import annotations

import pytest

from converter.importers.onnx.dim_expressions import evaluate, names_in


@pytest.mark.parametrize("text, value", [
    ("past_sequence_length + sequence_length", 7), ("a*2+b", 10), ("a - 1", 2),
    ("2 * a * b - 1", 23), ("sequence_length", None), ("a + c", None), ("a +", None),
    ("__import__('os')", None), ("a ** b", None), ("a + + b", None), ("(a + b)", None)])
def test_dim_expressions_are_parsed_not_evaluated(text, value):
    dims = {"past_sequence_length": 5, "sequence_length": 2, "a": 3, "b": 4}
    assert evaluate(text, dims) == value


def test_names_in_an_expression():
    assert names_in("past_sequence_length + sequence_length") == ["past_sequence_length",
                                                                  "sequence_length"]
    assert names_in("batch_size") == []
