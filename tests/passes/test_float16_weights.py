"""float16_weights (`convert --weights float16`): float32 constants of 256 bytes or more are
stored as float16 and read through one cast to float32, so the weights file about halves and
the graph still computes in float32. Small constants, values beyond float16's range and
operands a target wants constant stay float32 and are listed. Measured on tiny_cnn and the
onnx package's light squeezenet (seeded weights) against ONNX Runtime on the float source."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.errors import ConverterError
from converter.ir import ConstantData
from converter.lowering.onnx.executor import run_on_ort
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target

ROOT = Path(__file__).parents[2]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _source(name: str, folder: Path) -> Path:
    if name == "tiny_cnn":
        return ROOT / "models" / "tiny_cnn.onnx"
    from converter.testing.light_models import light_model

    return light_model(name, folder, seed=0)


def test_tiny_cnn_before_and_after():
    """Before: six float32 constants, no cast. After: the three of 256 bytes or more are
    float16, each read by a cast to float32 that keeps the constant's name; the biases stay."""
    graph = converter.load(ROOT / "models" / "tiny_cnn.onnx")
    assert {c.name: c.data_type for c in graph.constants.values()} == {
        "conv1_w": "float32", "conv1_b": "float32", "conv2_w": "float32",
        "conv2_b": "float32", "fc_w": "float32", "fc_b": "float32"}
    assert "cast" not in graph.op_histogram()
    before = {name: graph.operand(name).constant.numpy().copy() for name in graph.constants}
    [(_, result)] = run_passes(graph, ["float16_weights"], PassContext(weights="float16"))
    assert result.changed and result.counts == {"stored as float16": 3, "kept float32": 3}
    assert result.notes == ["3 constants stored as float16: 3.4 KiB -> 1.7 KiB",
                            "kept float32 (under 256 bytes): conv1_b, conv2_b, fc_b"]
    assert {c.name: c.data_type for c in graph.constants.values()} == {
        "conv1_w_float16": "float16", "conv1_b": "float32", "conv2_w_float16": "float16",
        "conv2_b": "float32", "fc_w_float16": "float16", "fc_b": "float32"}
    assert graph.op_histogram()["cast"] == 3
    for name in ("conv1_w", "conv2_w", "fc_w"):
        cast = graph.operand(name).producer
        assert cast.op_type == "cast" and cast.attrs == {"dataType": "float32"}
        assert cast.inputs[0].name == f"{name}_float16"
        stored = cast.inputs[0].constant.numpy()
        np.testing.assert_array_equal(stored, before[name].astype(np.float16))
        assert np.abs(stored.astype(np.float32) - before[name]).max() \
            <= np.abs(before[name]).max() * 2.0**-11
    # without asking, nothing changes
    again = converter.load(ROOT / "models" / "tiny_cnn.onnx")
    [(_, plain)] = run_passes(again, ["float16_weights"], PassContext())
    assert not plain.changed and "cast" not in again.op_histogram()


@pytest.mark.parametrize("name", ["tiny_cnn", "squeezenet"])
def test_weights_file_halves_and_outputs_match_the_float_source(name, tmp_path):
    """The .weights file is at most 0.55x the float32 one; over three seeded inputs the graph
    (read back from its files) matches ONNX Runtime on the float source with cosine >= 0.9999."""
    source = _source(name, tmp_path)
    converter.convert(source, tmp_path / "f32.webnn")
    graph = converter.convert(source, tmp_path / "f16.webnn", weights="float16")
    ratio = (tmp_path / "f16.weights").stat().st_size / (tmp_path / "f32.weights").stat().st_size
    assert ratio <= 0.55, ratio
    loaded = converter.load(tmp_path / "f16.webnn")
    assert loaded.op_histogram()["cast"] == graph.op_histogram()["cast"] > 0
    assert all(c.data_type in ("float16", "float32") for c in loaded.constants.values())
    session = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for seed in (0, 1, 2):
        rng = np.random.default_rng(seed)
        feeds = {n: rng.random(o.shape, dtype=np.float32) for n, o in loaded.inputs.items()}
        want = dict(zip(names, session.run(None, feeds)))
        got = converter.run(loaded, feeds)
        for out in loaded.outputs:
            assert _cosine(got[out], want[out]) >= 0.9999, (name, seed, out)


def test_operands_the_target_wants_constant_stay_float32():
    """coreml builds conv2d's bias and batchNormalization's statistics into its model: a cast's
    result there would break the target, so those constants stay float32 and are listed, while
    the filter beside them is stored as float16; the result fits coreml and computes as before."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 4, 5, 5])
    w = b.constant(rng.standard_normal((96, 4, 3, 3)).astype(np.float32), name="w")
    bias = b.constant(rng.standard_normal(96).astype(np.float32), name="bias")
    y = b.conv2d(x, w, bias=bias)
    stats = {k: b.constant(rng.random(96).astype(np.float32) + 0.5, name=k)
             for k in ("mean", "variance")}
    z = b.batchNormalization(y, stats["mean"], stats["variance"])
    graph = b.build({"z": z})
    feeds = {"x": rng.random((1, 4, 5, 5), dtype=np.float32)}
    want = run_on_ort(graph, feeds)["z"]
    report = convert_for_target(graph, "coreml", weights="float16")
    result = dict(report.passes)["float16_weights"]
    assert result.counts == {"stored as float16": 1, "kept float32": 3}
    kept = [n for n in result.notes if n.startswith("kept float32 (read where coreml")]
    assert len(kept) == 1 and all(k in kept[0] for k in ("bias", "mean", "variance"))
    types = {n: graph.operand(n).data_type for n in graph.constants}
    assert types.items() >= {"bias": "float32", "mean": "float32", "variance": "float32"}.items()
    assert [t for n, t in types.items() if n.endswith("_float16")] == ["float16"]
    assert check(graph, "coreml") == []
    got = run_on_ort(graph, feeds)["z"]
    assert _cosine(got, want) >= 0.9999


def test_values_beyond_float16_range_and_fills_stay_float32():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [128])
    big = np.full(128, 1.0, np.float32)
    big[7] = 1e6  # float16 would make it infinity
    nan = np.ones(128, np.float32)
    nan[3] = np.nan
    y = b.add(b.add(b.add(x, b.constant(big, name="big")), b.constant(nan, name="nan")),
              b.graph.add_constant("twos", ConstantData("float32", [128], fill=2.0)))
    graph = b.build({"y": y})
    [(_, result)] = run_passes(graph, ["float16_weights"], PassContext(weights="float16"))
    assert not result.changed
    assert result.notes == ["kept float32 (values beyond float16's range): big, nan",
                            "kept float32 (fills): twos"]


def test_unknown_weights_type_is_refused():
    with pytest.raises(ConverterError,
                       match="unknown weights type 'int2'.*float32, float16, int8, int4"):
        converter.convert(ROOT / "models" / "tiny_cnn.onnx", weights="int2")
    with pytest.raises(ConverterError, match="the .tflite export stores them as float32"):
        converter.convert(ROOT / "models" / "tiny_cnn.onnx", "out.tflite", weights="int4")
    with pytest.raises(ConverterError, match="converts one value of each dim"):
        converter.convert(ROOT / "models" / "tiny_cnn.onnx", weights="float16",
                          dims={"batch": [1, 2]})
    with pytest.raises(ConverterError, match="unknown weights type"):
        convert_for_target(converter.load(ROOT / "models" / "tiny_cnn.onnx"), "portable",
                           weights="bfloat16")
