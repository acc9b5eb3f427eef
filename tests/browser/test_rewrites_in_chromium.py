"""The chromium-litert rewrites, in the real browser: Chromium 153's WebNN on LiteRT refuses
  * pad in edge mode ("The edge padding mode is not supported in tflite schema"), at every
    rank: the pad_modes pass makes it gathers by constant indices;
  * clamp on int8, uint8, int32 and int64 (listed for floats only): int_clamp makes it max and
    min by constant bounds, which it takes for all four;
  * a constant over 128 MiB ("Buffer size is over inline limit"): split_constants cuts it into
    pieces joined by concat.
`check` says each source graph breaks chromium-litert and each converted one fits, and the
browser agrees: the source is refused, the converted graph builds and computes numpy's value
(numpy.pad, numpy.clip: an oracle independent of the converter). It also takes reflection
pads as they are, so the target refuses edge mode only (pass sweeps: tests/passes)."""
from __future__ import annotations

import numpy as np

from converter.builder import GraphBuilder
from converter.errors import ConverterError
from converter.ir import ConstantData
from converter.runtimes.chromium import run_chromium_many
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target
from tests.importers.onnx.helpers import imported, ort_outputs
from tests.passes.test_pad_modes import conv_edge_pad_model

TARGET = "chromium-litert"
RNG = np.random.default_rng(11)


def _pad(shape, begin, end, mode, data_type="float32"):
    b = GraphBuilder("pad")
    x = b.input("x", data_type, list(shape))
    return b.build({"y": b.pad(x, list(begin), list(end), mode=mode, name="pad")})


def _clamp(data_type):
    b = GraphBuilder("clamp")
    x = b.input("x", data_type, [4, 5])
    return b.build({"y": b.clamp(x, minValue=-3.5, maxValue=100, name="clip")})


def _big_constant():
    """x [1, 1024] times a constant of 128 MiB + 4 KiB (fills: no memory taken here)."""
    b = GraphBuilder("big")
    x = b.input("x", "float32", [1, 1024])
    columns = (128 * 2**20 + 4096) // 4 // 1024
    w = b.graph.add_constant("w", ConstantData("float32", (1024, columns), fill=0.5))
    return b.build({"y": b.matmul(x, w)})


def _converted(graph):
    """`graph` converted for the target; check said it breaks it, and fits it afterwards."""
    assert check(graph, TARGET), "the source graph should break the target"
    assert convert_for_target(graph, TARGET).passed
    assert check(graph, TARGET) == []
    return graph


def test_what_chromium_refuses_builds_and_computes_once_converted(browser_limits):
    cases, want, refused = [], [], []

    def case(graph, feeds, expected, refusal=None):
        cases.append((graph, feeds))
        want.append(expected)
        refused.append(refusal)

    # edge pads: the source is refused; converted, numpy's "edge" at ranks 1, 4 and 5, with
    # zero, one and several rows on each side
    for shape, begin, end, dt in [([5], [3], [2], "int32"),
                                  ([1, 3, 4, 4], [0, 0, 2, 1], [0, 0, 0, 3], "float32"),
                                  ([2, 3, 4], [1, 0, 2], [2, 1, 0], "int8"),
                                  ([2, 3, 2, 3, 4], [1, 0, 3, 2, 0], [2, 0, 1, 0, 4], "uint8")]:
        x = RNG.integers(-100 if dt == "int8" else 0, 100, shape).astype(dt)
        expected = np.pad(x, list(zip(begin, end)), mode="edge")
        source = _pad(shape, begin, end, "edge", dt)
        assert "option" in {v.kind for v in check(source, TARGET)}  # (int8: data types too)
        case(source, {"x": x}, None, "Unsupported data type int8" if dt == "int8"
             else "edge padding mode is not supported")
        case(_converted(_pad(shape, begin, end, "edge", dt)), {"x": x}, expected)
    # an ONNX CNN block with an edge Pad, converted (its gathers on channels-last axes)
    model, feeds = conv_edge_pad_model()
    block, _ = imported(model, feeds)
    [block_want] = ort_outputs(model, feeds)
    case(_converted(block), feeds, block_want)
    # reflection pads build as they are: check says they fit, the browser agrees
    for rank in range(1, 6):
        shape = [4] * rank
        begin, end = [3, 0, 1, 2, 1][:rank], [1, 2, 0, 3, 3][:rank]
        x = RNG.standard_normal(shape).astype(np.float32)
        graph = _pad(shape, begin, end, "reflection")
        assert check(graph, TARGET) == []
        case(graph, {"x": x}, np.pad(x, list(zip(begin, end)), mode="reflect"))
    # integer clamps: refused as they are, max/min once converted (bounds -3.5 -> -4, the
    # spec's round half to even, then saturated: 0 for uint8; 100 fits all four)
    for dt in ("int8", "uint8", "int32", "int64"):
        info = np.iinfo(dt)
        x = RNG.integers(max(info.min, -1000), min(info.max, 1000), [4, 5]).astype(dt)
        x.flat[:2] = (info.min, info.max)
        expected = np.clip(x, max(-4, info.min), 100).astype(dt)
        case(_clamp(dt), {"x": x}, None, f"Unsupported data type {dt}")
        case(_converted(_clamp(dt)), {"x": x}, expected)
    # a constant over 128 MiB: split, it builds and computes x @ w
    ones = np.ones((1, 1024), np.float32)
    case(_converted(_big_constant()), {"x": ones}, np.full((1, 32769), 512, np.float32))

    results = run_chromium_many(cases)

    for (graph, _), got, expected, refusal in zip(cases, results, want, refused):
        if refusal is not None:
            assert isinstance(got, ConverterError) and refusal in got.line(), (graph.name, got)
            continue
        assert not isinstance(got, ConverterError), got.line()
        assert got["y"].dtype == expected.dtype, graph.name
        if graph is block:  # convolutions: XNNPACK sums in another order than ONNX Runtime
            np.testing.assert_allclose(got["y"], expected, rtol=1e-5, atol=1e-4)
            continue
        np.testing.assert_array_equal(got["y"], expected, err_msg=graph.name)


def test_alexnet_over_128_mib_runs_in_chromium_once_converted(browser_limits, tmp_path):
    """A real public model (the onnx package's light bvlc_alexnet, seeded weights): its fc6
    weight is 151 MB, so Chromium's build() refuses it as it is (test_chromium_runtime.py);
    converted for chromium-litert the weight is two constants joined by concat, and the model
    computes what ONNX Runtime computes on the source."""
    import onnxruntime as ort

    import converter
    from converter.parity import compare
    from converter.testing.light_models import light_model

    source = light_model("bvlc_alexnet", tmp_path, seed=0)
    graph = converter.load(source)
    assert [(v.kind, v.tensor, v.advice) for v in check(graph, TARGET)] == [
        ("tensor-size", "fc6_w_0", "split-constant")]
    report = convert_for_target(graph, TARGET)
    assert report.passed and dict(report.passes)["split_constants"].counts == {
        "constants split": 1, "pieces": 2}
    assert max(c.constant.nbytes for c in graph.constants.values()) <= 128 * 2**20
    (name,) = graph.inputs
    feeds = {name: np.random.default_rng(1).random(graph.inputs[name].shape, dtype=np.float32)}
    [got] = run_chromium_many([(graph, feeds)])
    assert not isinstance(got, ConverterError), got.line()
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    for out in graph.outputs:
        parity = compare(out, got[out], want[out])
        assert parity.passed, parity.to_json()
