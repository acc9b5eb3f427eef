"""int_clamp: an integer clamp the target refuses (chromium-litert lists clamp for floats only,
and its build() refuses int8, uint8, int32 and int64) becomes max and min with rank-0 constant
bounds, which that target takes. The sweep runs the rewritten graph on ONNX Runtime against
numpy.clip with the bounds cast as the spec casts an MLNumber (round half to even, saturate
to the type's range): an oracle independent of the converter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.lowering.onnx.executor import run_on_ort
from converter.passes import PassContext, run_passes
from converter.targets import Target, load_target
from converter.targets.check import check
from converter.targets.pipeline import check_after_passes

LITERT = load_target("chromium-litert")
INT_TYPES = ["int8", "uint8", "int32", "int64"]


def _clamp_graph(data_type, shape=(3, 4), **bounds):
    b = GraphBuilder("g")
    x = b.input("x", data_type, list(shape))
    return b.build({"y": b.clamp(x, name="clip", **bounds)})


def _spec_bound(value: float, data_type: str) -> int:
    """The spec's cast of an MLNumber to an integer type, written out for the oracle."""
    info = np.iinfo(data_type)
    if math.isinf(value):
        return info.min if value < 0 else info.max
    return int(min(max(np.rint(value), info.min), info.max))


def _feed(data_type, shape=(3, 4), seed=0):
    info = np.iinfo(data_type)
    rng = np.random.default_rng(seed)
    x = rng.integers(max(info.min, -2**40), min(info.max, 2**40), shape, endpoint=True)
    x.flat[:2] = (info.min, info.max)  # the type's ends, where a wrong bound type would show
    return x.astype(data_type)


def test_an_int32_clamp_becomes_max_and_min_by_constants():
    graph = _clamp_graph("int32", minValue=0, maxValue=5)
    found = check(graph, LITERT)
    assert [(v.kind, v.operand, v.advice) for v in found] == [
        ("data-type", "input", "int-clamp"), ("data-type", "output", "int-clamp")]
    assert found[0].fix == ("the 'int_clamp' pass clamps int32 with max and min by constant "
                            "bounds (exact)")

    [(_, result)] = run_passes(graph, ["int_clamp"], PassContext(target=LITERT))

    assert result.changed and result.counts == {"int32 clamps as max/min": 1}
    assert [op.op_type for op in graph.operations] == ["max", "min"]
    bounds = [op.inputs[1] for op in graph.operations]
    assert [(c.data_type, c.shape, c.constant.fill) for c in bounds] == [
        ("int32", (), 0), ("int32", (), 5)]
    assert check(graph, LITERT) == []
    assert graph.outputs["y"].producer.op_type == "min"


def test_float_clamps_and_targets_that_take_the_type_are_left_alone():
    graph = _clamp_graph("float32", minValue=0, maxValue=5)
    [(_, result)] = run_passes(graph, ["int_clamp"], PassContext(target=LITERT))
    assert not result.changed
    graph = _clamp_graph("int32", minValue=0, maxValue=5)
    takes_it = load_target("onnxruntime")
    [(_, result)] = run_passes(graph, ["int_clamp"], PassContext(target=takes_it))
    assert not result.changed and [op.op_type for op in graph.operations] == ["clamp"]
    # coreml's clamp is float-only too, its max and min take int32: the pass serves it alike
    [(_, result)] = run_passes(graph, ["int_clamp"], PassContext(target=load_target("coreml")))
    assert result.changed and [op.op_type for op in graph.operations] == ["max", "min"]


def test_a_clamp_whose_max_and_min_do_not_fit_stays_with_a_note():
    limits = {**LITERT.limits}
    for op in ("max", "min"):
        limits[op] = {k: {**v, "dataTypes": ["float32"]} for k, v in LITERT.limits[op].items()}
    target = Target("float-max", limits)
    graph = _clamp_graph("int32", minValue=0, maxValue=5)
    [(_, result)] = run_passes(graph, ["int_clamp"], PassContext(target=target))
    assert not result.changed and [op.op_type for op in graph.operations] == ["clamp"]
    assert result.notes and result.notes[0].startswith(
        "clamp 'clip' stays in int32, which float-max's clamp refuses: its replacement needs "
        "max")
    assert not graph.constants
    assert {v.advice for v in check(graph, target)} == {"no-type-change"}


BOUNDS = [dict(minValue=-3, maxValue=7), dict(minValue=1.5, maxValue=2.5),
          dict(minValue=-2.5, maxValue=300), dict(minValue=-math.inf, maxValue=math.inf),
          dict(minValue=-1e30), dict(maxValue=-0.5), dict()]


@pytest.mark.parametrize("bounds", BOUNDS, ids=lambda b: "_".join(f"{k}{v}" for k, v in
                                                                    b.items()) or "none")
@pytest.mark.parametrize("data_type", INT_TYPES)
def test_sweep_max_min_compute_numpy_clip(data_type, bounds):
    graph = _clamp_graph(data_type, **bounds)
    x = _feed(data_type, seed=len(bounds))
    lo = _spec_bound(bounds.get("minValue", -math.inf), data_type)
    hi = _spec_bound(bounds.get("maxValue", math.inf), data_type)
    want = np.clip(x, lo, hi).astype(data_type) if lo <= hi else np.full_like(x, hi)

    report = check_after_passes(graph, LITERT)

    assert report.passed and {by for by, _ in report.fixed} == {"int_clamp"}
    assert graph.inputs["x"].data_type == data_type  # int64 stays exact: no narrowing
    assert "clamp" not in {op.op_type for op in graph.operations}
    got = run_on_ort(graph, {"x": x})["y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_the_clamp_decomposition_casts_bounds_as_the_spec_does():
    """The old rule truncated (int(1.5) == 1, where the spec rounds half to even: 2) and
    raised OverflowError on an infinite bound."""
    graph = _clamp_graph("int32", minValue=1.5, maxValue=math.inf)
    run_passes(graph, ["int_clamp"], PassContext(target=LITERT))
    assert [op.inputs[1].constant.fill for op in graph.operations] == [2, 2**31 - 1]


@pytest.mark.parametrize("target", ["coreml", "portable"])
def test_an_int64_clamp_narrowed_to_int32_is_rewritten_after_the_narrowing(target):
    """coreml's and portable's clamp and max take no int64: data_types narrows the clamp to int32,
    then int_clamp (after it in the pipeline) makes it max and min in int32."""
    graph = _clamp_graph("int64", minValue=-2, maxValue=1000)
    x = np.array([[-2**31, -3, -2, 0], [5, 999, 1000, 2**31 - 1], [7, 8, 9, -1]], np.int32)

    report = check_after_passes(graph, target)

    assert report.passed, [v.line() for v in report.violations]
    first, second = [r for name, r in report.passes if name == "int_clamp"]
    assert not first.changed and not first.notes  # left for data_types to narrow, unsaid
    assert second.counts == {"int32 clamps as max/min": 1}
    assert graph.inputs["x"].data_type == "int32"  # the interface narrowed by data_types
    got = run_on_ort(graph, {"x": x})["y"]
    np.testing.assert_array_equal(got, np.clip(x, -2, 1000))
