"""Every op of the catalogue that the browser's opSupportLimits() lists runs in Chromium's WebNN
on a generated graph for each data type it lists, and matches our ONNX executor within the
parity bounds of op_cases.py; where the two differ, known_differences.py says how and which
side the spec supports, and the difference is checked to be exactly that."""
from __future__ import annotations

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.errors import ConverterError, OpValidationError
from converter.ops.registry import all_ops
from converter.verification.parity import compare
from converter.runtimes.chromium import run_chromium, run_chromium_many

from .known_differences import BEYOND_THE_SPEC, DIFFERENCES
from .op_cases import case_ops, make_case


def listed_types(limits: dict, op: str) -> list[str]:
    """The data types the browser lists for the op's main operand (for quantizeLinear, the
    output's: its input is always float)."""
    entry = limits[op]
    name = {"where": "trueValue", "quantizeLinear": "output"}.get(op)
    if name is None:
        name = next(n for n in ("input", "a", "inputs") if n in entry)
    return entry[name]["dataTypes"]


def test_every_catalogue_op_has_a_case():
    assert case_ops() == sorted(all_ops())


def test_the_browser_lists_every_catalogue_op(browser_limits):
    assert set(all_ops()) <= set(browser_limits), sorted(set(all_ops()) - set(browser_limits))


@pytest.mark.parametrize("op", case_ops())
def test_op_runs_in_chromium_and_matches_our_executor(op, browser_limits):
    if op not in browser_limits:
        pytest.skip(f"the browser does not list {op}")
    cases = []
    for dt in listed_types(browser_limits, op):
        if (op, dt) in BEYOND_THE_SPEC:
            with pytest.raises(OpValidationError):
                make_case(op, dt)
            continue
        cases.append(make_case(op, dt))
    results = run_chromium_many([(c.graph, c.feeds) for c in cases])
    problems = []
    for case, got in zip(cases, results):
        want = converter.run(case.graph, case.feeds)
        known = DIFFERENCES.get((op, case.data_type))
        if known is not None:
            known.check(case, got, want)  # the documented difference, exactly
            continue
        if isinstance(got, ConverterError):
            problems.append(f"{case.data_type}: {got.line()}")
            continue
        for name, value in want.items():
            parity = compare(name, got[name], value, case.bounds)
            if not parity.passed:
                problems.append(f"{case.data_type} {name}: {parity.reason}, max {parity.max_ulp} "
                                f"ULP / {parity.max_abs:.3g} abs at {parity.worst_index}")
    assert not problems, problems


def test_known_differences_are_cases_the_browser_lists(browser_limits):
    for op, dt in [*DIFFERENCES, *BEYOND_THE_SPEC]:
        assert dt in listed_types(browser_limits, op), (op, dt)


# -- differences outside the generated cases ---------------------------------------------------
def _run_both(graph, feeds):
    with pytest.raises(ConverterError) as refused:
        run_chromium(graph, feeds)
    return refused.value, converter.run(graph, feeds)


def test_conv_transpose2d_explicit_padding_is_refused_by_chromium(browser_limits):
    """index.bs defines convTranspose2d's padding as any [beginH, endH, beginW, endW]; Chromium's
    LiteRT backend takes only TFLite's SAME/VALID layouts. Our executor computes it: for a 1x1
    input the output is the filter crop, filter[1:3, 1:3] for padding 1 and outputPadding 1."""
    b = GraphBuilder("ct")
    x = b.input("x", "float32", [1, 1, 1, 1])
    w = b.constant(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3))
    y = b.convTranspose2d(b.relu(x), w, strides=[2, 2], padding=[1, 1, 1, 1],
                          outputPadding=[1, 1], name="up")
    refused, ours = _run_both(b.build({"y": b.relu(y)}), {"x": np.ones((1, 1, 1, 1), np.float32)})
    assert "Explicit padding is not supported for transpose conv2d" in refused.what
    # build() errors carry no label: the runtime bisects the graph to the op that breaks it.
    assert refused.where == "convTranspose2d 'up'"
    assert ours["y"].tolist() == [[[[4.0, 5.0], [7.0, 8.0]]]]


def test_pad_edge_mode_is_refused_by_chromium(browser_limits):
    """index.bs defines pad mode "edge" (repeat the edge values); Chromium's LiteRT backend
    refuses it at build, though opSupportLimits lists pad for every float type."""
    b = GraphBuilder("edge")
    x = b.input("x", "float32", [3])
    y = b.pad(x, [2], [1], mode="edge", name="edges")
    refused, ours = _run_both(b.build({"y": y}), {"x": np.array([1, 2, 3], np.float32)})
    assert "edge padding mode is not supported" in refused.what
    assert refused.where == "pad 'edges'"
    assert ours["y"].tolist() == [1, 1, 1, 2, 3, 3]
