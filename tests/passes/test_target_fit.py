"""target_fit.misfit (what the rewrite passes test the ops they build with) gives the verdict
`check` gives on each operation (targets/check.py's rule 2), on every built-in target."""
from __future__ import annotations

import numpy as np
import pytest

from converter.builder import GraphBuilder
from converter.passes.target_fit import misfit
from converter.targets import builtin_targets, load_target
from converter.targets.check import operation_violations


def _graph():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    i = b.input("i", "int32", [2, 3])
    q = b.input("q", "int8", [1, 2, 4, 4])
    idx = b.input("idx", "int64", [2])
    ones = b.constant(np.ones(3, np.float32))
    outputs = {
        "edge": b.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], mode="edge", name="edge"),
        "reflect": b.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], mode="reflection", name="reflect"),
        "pad8": b.pad(q, [0, 0, 1, 1], [0, 0, 1, 1], name="pad8"),
        "clip_i": b.clamp(i, minValue=0, maxValue=5, name="clip_i"),
        "clip_f": b.clamp(x, minValue=0, maxValue=5, name="clip_f"),
        "gather64": b.gather(x, idx, axis=1, name="gather64"),
        "bn": b.batchNormalization(x, b.reduceMean(x, axes=[0, 2, 3], name="mean"), ones,
                                   scale=ones, bias=ones, name="bn"),
        "gelu": b.gelu(x, name="gelu"),
        "six": b.reshape(x, [1, 1, 1, 3, 4, 4], name="six"),
        "max_i": b.max(i, b.constant(np.array(1, np.int32)), name="max_i"),
        "cat": b.concat([q, q], 1, name="cat"),
        "u64": b.cast(x, "uint64", name="u64"),
    }
    return b.build(outputs)


@pytest.mark.parametrize("target", builtin_targets())
def test_misfit_agrees_with_check_on_every_operation(target):
    t = load_target(target)
    graph = _graph()
    verdicts = [(op.op_type, misfit(op, t) is None, not operation_violations(op, t))
                for op in graph.operations]
    assert [(name, a) for name, a, _ in verdicts] == [(name, b) for name, _, b in verdicts]
    assert any(a for _, a, _ in verdicts)


def test_misfit_says_why():
    t = load_target("chromium-litert")
    graph = _graph()
    why = {op.name: misfit(op, t) for op in graph.operations}
    assert why["edge"] == "chromium-litert refuses pad with mode 'edge'"
    assert why["clip_i"] == "chromium-litert's clamp takes no int32 input"
    assert why["pad8"] == "chromium-litert's pad takes no int8 input"
    assert why["reflect"] is None and why["max_i"] is None
    assert [name for name, a, _ in [(op.name, misfit(op, t) is None, 0) for op in
                                    graph.operations] if not a] == [
        "edge", "pad8", "clip_i", "u64"]
