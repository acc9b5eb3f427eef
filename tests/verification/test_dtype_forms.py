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

from converter.source_runs import FLOAT_ACTIVATIONS_LABEL, int8_activation_nodes, run_onnx
from converter.verification import verify

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
    for level in range(5):
        nbits_model(tmp_path / f"m{level}.onnx", level)
        assert int8_activation_nodes(tmp_path / f"m{level}.onnx") == (level == 4)


def test_the_int4_decoder_at_level_4_is_judged_against_its_math(tmp_path):
    """The committed onnxruntime-genai int4 decoder, set to accuracy_level 4 as the builder's
    CPU default writes it: one step verifies (it did not: "the graph computes something
    other than the source")."""
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "models" / "tiny-llama" / "int4"
    if not (source / "model.onnx").exists():
        pytest.skip("models/tiny-llama/ is not here")
    model = onnx.load(str(source / "model.onnx"))
    for node in model.graph.node:
        for attr in node.attribute:
            if node.op_type == "MatMulNBits" and attr.name == "accuracy_level":
                attr.i = 4
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    assert int8_activation_nodes(path) > 0
    report = verify(path, seed=0, dims={"batch_size": 1, "sequence_length": 3,
                                        "past_sequence_length": 2, "total_sequence_length": 5,
                                        "kv_cache_dim": 16})
    assert report.passed, str(report)
