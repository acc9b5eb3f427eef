"""The dtype forms transformers.js and onnxruntime-genai ship (issue 31), each verified end to
end against ONNX Runtime: q4 (com.microsoft MatMulNBits at every accuracy_level), q8
(quantize_dynamic at several opsets) and fp16 (float16 inside, float32 at the boundary).
The expected values are worked out independently: numpy in float64 by hand, and ORT."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from converter.runtimes.source_runs import run_onnx
from converter.verification.core import verify

K, N, BLOCK, M = 64, 24, 32, 6


def nbits_model(path, level: int, *, zero_points: bool = False, seed: int = 0):
    """A [1, M, K] x MatMulNBits(uint4 B [N, K], blockwise scales) model; returns the float64
    weights W [N, K] its bytes stand for, worked out here from the op's definition."""
    rng = np.random.default_rng(seed)
    blocks = K // BLOCK
    q = rng.integers(0, 16, (N, K)).astype(np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8).reshape(N, blocks, BLOCK // 2)
    scales = (rng.random((N, blocks)) * 0.1 + 0.01).astype(np.float32)
    zp = rng.integers(0, 16, (N, blocks)).astype(np.uint8) if zero_points else \
        np.full((N, blocks), 8, np.uint8)
    inputs = ["A", "B", "S"]
    inits = [nh.from_array(packed, "B"), nh.from_array(scales.reshape(-1), "S")]
    if zero_points:  # two 4-bit zero points a byte, low nibble first, each row whole bytes
        padded = np.concatenate([zp, np.zeros((N, blocks % 2), np.uint8)], axis=1)
        inits.append(nh.from_array((padded[:, 0::2] | (padded[:, 1::2] << 4)).reshape(-1),
                                   "Z"))
        inputs.append("Z")
    node = H.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=K, N=N, bits=4,
                       block_size=BLOCK, accuracy_level=level)
    graph = H.make_graph([node], "q4", [H.make_tensor_value_info("A", TP.FLOAT, [1, M, K])],
                         [H.make_tensor_value_info("Y", TP.FLOAT, [1, M, N])], inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17),
                                               H.make_opsetid("com.microsoft", 1)])
    onnx.save(model, str(path))
    per_element = np.repeat(scales.astype(np.float64), BLOCK, axis=1)
    return (q.astype(np.float64) - np.repeat(zp, BLOCK, axis=1)) * per_element


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("zero_points", [False, True])
def test_q4_matmul_nbits_verifies_at_every_accuracy_level(tmp_path, level, zero_points):
    path = tmp_path / "q4.onnx"
    w = nbits_model(path, level, zero_points=zero_points)
    report = verify(path, seed=0)
    assert report.passed, str(report)
    a = np.random.default_rng(0).random((1, M, K))  # verify's seeded input, drawn the same way
    by_hand = a @ w.T
    # ORT at the model's float math is the float64 product up to float32 rounding
    ours = run_onnx(path, {"A": a.astype(np.float32)}, float_activations=True)["Y"]
    np.testing.assert_allclose(ours, by_hand, rtol=1e-5, atol=1e-5)
    if level == 4:  # ORT's int8 activations move the result far beyond the float32 budget
        from converter.runtimes.source_runs import FLOAT_ACTIVATIONS_LABEL

        theirs = run_onnx(path, {"A": a.astype(np.float32)})["Y"]
        assert np.abs(theirs - by_hand).max() > 1e-3
        y = report.outputs[0]
        assert y.extra["sourceNoiseFrom"] == FLOAT_ACTIVATIONS_LABEL
        assert y.extra["webnnVsF64"] < 1e-4  # the graph is the model's math
        assert any("accuracy_level 4" in note for note in report.notes)
        assert "note: ONNX Runtime quantizes the activations of 1 MatMulNBits node" in str(report)
    else:
        assert not report.notes


def test_int8_activation_nodes_are_counted_only_at_level_4(tmp_path):
    from converter.runtimes.source_runs import int8_activation_nodes

    for level in range(5):
        nbits_model(tmp_path / f"m{level}.onnx", level)
        assert int8_activation_nodes(tmp_path / f"m{level}.onnx") == (level == 4)


def _int4_decoder_at_level_4(tmp_path=None):
    """onnxruntime-genai's int4 decoder as its builder writes it for the CPU by default
    (MatMulNBits at accuracy_level 4; models/make_tiny_llama.py's int4-cpu-default)."""
    from pathlib import Path

    from converter.runtimes.source_runs import int8_activation_nodes

    path = (Path(__file__).resolve().parents[2] / "models" / "tiny-llama" / "int4-cpu-default"
            / "model.onnx")
    if not path.exists():
        pytest.skip("models/tiny-llama/ is not here")
    assert int8_activation_nodes(path) > 0
    return path


def test_the_int4_decoder_at_level_4_is_judged_against_its_math(tmp_path):
    """One step verifies (it did not: "the graph computes something other than the
    source")."""
    path = _int4_decoder_at_level_4(tmp_path)
    report = verify(path, seed=0, dims={"batch_size": 1, "sequence_length": 3,
                                        "past_sequence_length": 2, "total_sequence_length": 5,
                                        "kv_cache_dim": 16})
    assert report.passed, str(report)


def test_the_int4_decoder_at_level_4_decodes_against_its_math(tmp_path):
    """Greedy decoding compares the logits with ORT at accuracy_level 0 and says so, and what
    ORT at level 4 chooses (the logits moved 0.17 by its int8 activations: a mismatch)."""
    from converter.state.generation import generate_on_onnxruntime
    from converter.state.generation import load_decoder
    from converter.verification.decode import verify_decoding

    path = _int4_decoder_at_level_4(tmp_path)
    dims = {"kv_cache_dim": 16}  # hidden 64 / 4 heads (models/make_tiny_llama.py)
    graph = load_decoder(path, capacity=16, dims=dims)
    report = verify_decoding(path, graph, prompt=[1, 5, 9], steps=4, dims=dims)
    assert report.passed, report.to_json()
    assert report.source_runtime == "onnxruntime (MatMulNBits at accuracy_level 0)"
    (note,) = report.notes
    assert "accuracy_level 4 ORT chooses the same tokens" in note
    # the reference is the model's float math: ORT at level 0 itself, independently run
    float_run = generate_on_onnxruntime(path, [1, 5, 9], 4, dims=dims, float_activations=True)
    assert report.source_tokens == float_run.tokens
    int8_run = generate_on_onnxruntime(path, [1, 5, 9], 4, dims=dims)
    moved = max(np.abs(a - b).max() for a, b in zip(int8_run.logits, float_run.logits))
    assert moved > 1e-2


# -- fp16: float16 inside -----------------------------------------------------------------------
def _norm_model(path, op: str, shape, epsilon=1e-12, opset=18):
    """One float16 normalization (ORT computes its statistics in float32), epsilon 1e-12: 0 in
    float16. Returns its scale and bias."""
    rng = np.random.default_rng(5)
    channels = shape[-1] if op.endswith("LayerNormalization") else shape[1]
    domain = "com.microsoft" if op == "SkipLayerNormalization" else ""
    scale = (rng.random(channels if op != "GroupNormalization" else 2) + 0.5).astype(np.float16)
    bias = rng.standard_normal(scale.shape).astype(np.float16)
    inputs, inits, attrs = ["x", "scale", "bias"], [], {"epsilon": epsilon}
    if op == "LayerNormalization":
        attrs["axis"] = -1
    if op == "GroupNormalization":
        attrs["num_groups"] = 2
    if op == "SkipLayerNormalization":
        inputs = ["x", "skip", "scale", "bias"]
        inits.append(nh.from_array(np.zeros(shape, np.float16), "skip"))
    inits += [nh.from_array(scale, "scale"), nh.from_array(bias, "bias")]
    node = H.make_node(op, inputs, ["y"], domain=domain, **attrs)
    graph = H.make_graph([node], "n", [H.make_tensor_value_info("x", TP.FLOAT16, shape)],
                         [H.make_tensor_value_info("y", TP.FLOAT16, shape)], inits)
    opsets = [H.make_opsetid("", opset)] + ([H.make_opsetid(domain, 1)] if domain else [])
    onnx.save(H.make_model(graph, opset_imports=opsets), str(path))
    return scale.astype(np.float64), bias.astype(np.float64)


@pytest.mark.parametrize("op, shape, axes", [
    ("LayerNormalization", [2, 3, 16], (2,)),
    ("SkipLayerNormalization", [2, 3, 16], (2,)),
    ("InstanceNormalization", [1, 4, 3, 5], (2, 3)),
    ("InstanceNormalization", [1, 4, 6], (2,)),  # reshaped to 4-D first
])
def test_float16_normalizations_keep_the_epsilon_float16_loses(tmp_path, op, shape, axes):
    path = tmp_path / "n.onnx"
    scale, bias = _norm_model(path, op, shape)
    x = np.random.default_rng(1).random(shape).astype(np.float16)
    x[0, 0] = 0.5  # a constant row (layer) or channel (instance): variance 0
    x[(0, 1) if op == "InstanceNormalization" else (0,)] = 0.25
    report = verify(path, feeds={"x": x}, oracle="always")
    (y,) = report.outputs
    assert y.extra["webnnVsF64"] <= 2e-3, str(report)  # a float16 rounding or two
    if op.endswith("LayerNormalization"):
        assert report.passed, str(report)
        assert y.max_ulp <= 1, str(report)  # ORT's float32 statistics, rounded once
    # (ORT's float16 InstanceNormalization is 16 float16 ULPs off the math on a channel of
    # variance 0, where it should give the bias: the verdict there is ORT's to lose.)
    # numpy in float64, epsilon 1e-12 as given: finite everywhere
    x64 = x.astype(np.float64)
    centered = x64 - x64.mean(axis=axes, keepdims=True)
    normalized = centered / np.sqrt((centered ** 2).mean(axis=axes, keepdims=True) + 1e-12)
    along = [1] * len(shape)
    along[-1 if op.endswith("LayerNormalization") else 1] = -1
    want = normalized * scale.reshape(along) + bias.reshape(along)
    from converter.runtimes.execute import run
    from converter.importers.onnx import import_onnx

    got = run(import_onnx(path), {"x": x})["y"]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got.astype(np.float64), want, atol=4e-3, rtol=4e-3)


def _fp16_inside(path, *, compute_fp16: bool = True):
    """transformers.js's fp16 form: float32 inputs and outputs, Cast to float16 after the
    input and back before the output; or (compute_fp16=False) float16 weights cast up to
    compute in float32."""
    rng = np.random.default_rng(3)
    d, hidden = 32, 48
    w1 = (rng.standard_normal((d, hidden)) / np.sqrt(d)).astype(np.float16)
    w2 = (rng.standard_normal((hidden, d)) * 0.3).astype(np.float16)
    if compute_fp16:
        nodes = [H.make_node("Cast", ["x"], ["x16"], to=TP.FLOAT16),
                 H.make_node("MatMul", ["x16", "w1"], ["a"]), H.make_node("Tanh", ["a"], ["t"]),
                 H.make_node("MatMul", ["t", "w2"], ["o"]),
                 H.make_node("Cast", ["o"], ["y"], to=TP.FLOAT)]
    else:
        nodes = [H.make_node("Cast", ["w1"], ["w1f"], to=TP.FLOAT),
                 H.make_node("Cast", ["w2"], ["w2f"], to=TP.FLOAT),
                 H.make_node("MatMul", ["x", "w1f"], ["a"]), H.make_node("Tanh", ["a"], ["t"]),
                 H.make_node("MatMul", ["t", "w2f"], ["y"])]
    graph = H.make_graph(nodes, "fp16", [H.make_tensor_value_info("x", TP.FLOAT, [1, 4, d])],
                         [H.make_tensor_value_info("y", TP.FLOAT, [1, 4, d])],
                         [nh.from_array(w1, "w1"), nh.from_array(w2, "w2")])
    onnx.save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17)]), str(path))


@pytest.mark.parametrize("compute_fp16", [True, False])
def test_a_float32_boundary_around_float16_compute_gets_the_float16_bounds(tmp_path,
                                                                           compute_fp16):
    from converter.importers.onnx import import_onnx
    from converter.verification.parity import default_bounds
    from converter.verification.output_bounds import output_bounds

    path = tmp_path / "m.onnx"
    _fp16_inside(path, compute_fp16=compute_fp16)
    graph = import_onnx(path)
    assert graph.outputs["y"].data_type == "float32"
    want = default_bounds("float16" if compute_fp16 else "float32")
    assert output_bounds(graph, "y") == want
    report = verify(path, seed=0)
    assert report.passed, str(report)
    assert report.outputs[0].bounds == want
    noted = any("computed in float16" in note for note in report.notes)
    assert noted == compute_fp16
    # the user's own bounds replace the policy's, and the note goes with it
    assert not verify(path, seed=0, atol=1e-3, rtol=1e-3).notes


def test_the_float64_copy_of_a_float16_model_has_no_float16_rounding(tmp_path):
    from converter.runtimes.source_runs import run_source_f64

    nodes = [H.make_node("Cast", ["x"], ["x16"], to=TP.FLOAT16),
             H.make_node("Add", ["x16", "c"], ["s"]),
             H.make_node("Cast", ["s"], ["y"], to=TP.FLOAT)]
    graph = H.make_graph(nodes, "g", [H.make_tensor_value_info("x", TP.FLOAT, [2])],
                         [H.make_tensor_value_info("y", TP.FLOAT, [2])],
                         [nh.from_array(np.array([1e-4, 0.5], np.float16), "c")])
    path = tmp_path / "m.onnx"
    onnx.save(H.make_model(graph, opset_imports=[H.make_opsetid("", 17)]), str(path))
    double, how = run_source_f64(path, {"x": np.array([1.0, 0.25], np.float32)})
    assert how == "ONNX Runtime on a float64 copy of the model"
    # 1 + 1e-4 is 1 in float16; the float16 constant's own value, 1.0001e-4, is kept
    np.testing.assert_allclose(double["y"], [1 + float(np.float16(1e-4)), 0.75], rtol=1e-12)


def test_float16_group_normalization_keeps_the_epsilon(tmp_path):
    """GroupNormalization (opset 18: scale and bias per group) of a constant group in float16,
    epsilon 1e-12: ORT's value, finite, and numpy's float64 value by hand."""
    from converter.runtimes.execute import run
    from converter.importers.onnx import import_onnx

    path = tmp_path / "g.onnx"
    scale, bias = _norm_model(path, "GroupNormalization", [1, 4, 6], opset=18)
    x = np.random.default_rng(1).random([1, 4, 6]).astype(np.float16)
    x[0, :2] = 0.5  # the first group (channels 0 and 1): variance 0
    report = verify(path, feeds={"x": x})
    assert report.passed, str(report)
    assert report.outputs[0].max_ulp <= 1, str(report)
    groups = x.astype(np.float64).reshape(1, 2, 12)
    centered = groups - groups.mean(axis=2, keepdims=True)
    normalized = (centered / np.sqrt((centered ** 2).mean(axis=2, keepdims=True) + 1e-12))
    want = normalized * scale.reshape(1, 2, 1) + bias.reshape(1, 2, 1)
    got = run(import_onnx(path), {"x": x})["y"].astype(np.float64).reshape(1, 2, 12)
    np.testing.assert_allclose(got, want, atol=4e-3, rtol=4e-3)
