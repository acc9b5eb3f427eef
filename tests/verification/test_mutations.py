"""Sensitivity: converted graphs changed the way converter bugs change them must FAIL
verification, on a small CNN (10 ONNX nodes) and on light_resnet50 (176 WebNN operations),
whatever the noise rules allow."""
import pytest

import converter
from converter.verification.parity import NOISE_FACTOR

from .mutations import MUTATIONS


def _fails_for_the_right_reason(source, mutation):
    graph = converter.load(source)
    changed = MUTATIONS[mutation](graph)
    assert not graph.problems()
    report = converter.verify(source, graph, seed=0)
    (out,) = report.outputs
    assert not report.passed, f"{mutation} at {changed} passed: {out.to_json()}"
    # it is the conversion that is caught: the source is far from the (mutated) graph's
    # float64 value, beyond twice every spread of its own
    assert out.reason.startswith("the graph computes something other than the source"), \
        out.reason
    assert out.extra["sourceVsF64"] > NOISE_FACTOR * out.extra["sourceNoise"]
    assert "hint" in report.to_json()
    return out


def test_the_unmutated_graphs_pass(small_model, resnet50):
    for source in (small_model, resnet50):
        graph = converter.load(source)
        assert converter.verify(source, graph, seed=0, oracle="always").passed
    assert len(converter.load(resnet50).operations) >= 100


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_mutation_fails_on_a_small_model(mutation, small_model):
    out = _fails_for_the_right_reason(small_model, mutation)
    assert out.extra["sourceVsF64"] > 1e-3


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_mutation_fails_on_resnet50(mutation, resnet50):
    out = _fails_for_the_right_reason(resnet50, mutation)
    assert out.extra["sourceVsF64"] > 1e-3
