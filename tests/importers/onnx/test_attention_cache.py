"""GroupQueryAttention over a fixed-capacity KV cache (ONNX Runtime's shared-buffer form:
total_sequence_length is the past buffers' length), compared with ONNX Runtime's kernel.

The new rows go in at seqlens_k + 1 - S, a runtime position, so one graph serves every step;
ONNX Runtime leaves the rows past seqlens_k of its present outputs unspecified, so only the
filled rows are compared there.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.runtimes.execute import run
from converter.importers.onnx import import_model

MS = "com.microsoft"
RNG = np.random.default_rng(12)
HEADS, KV_HEADS, HEAD, CAPACITY = 4, 2, 16, 8


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(batch: int, seq: int, attrs: dict, rotary: bool):
    names = ["q", "k", "v", "pk", "pv", "sl", "tsl"]
    inits = [numpy_helper.from_array(np.array(CAPACITY, np.int32), "tsl")]
    if rotary:
        angles = RNG.standard_normal((32, HEAD // 2))
        inits += [numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos"),
                  numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin")]
        names += ["cos", "sin"]
        attrs = {**attrs, "do_rotary": 1}
    node = helper.make_node("GroupQueryAttention", names, ["y", "pk_out", "pv_out"], domain=MS,
                            num_heads=HEADS, kv_num_heads=KV_HEADS, **attrs)
    shapes = {"q": [batch, seq, HEADS * HEAD], "k": [batch, seq, KV_HEADS * HEAD],
              "v": [batch, seq, KV_HEADS * HEAD], "pk": [batch, KV_HEADS, CAPACITY, HEAD],
              "pv": [batch, KV_HEADS, CAPACITY, HEAD]}
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in shapes.items()]
    ins.append(helper.make_tensor_value_info("sl", TensorProto.INT32, [batch]))
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
            for n in ("y", "pk_out", "pv_out")]
    model = helper.make_model(helper.make_graph([node], "gqa", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 21),
                                             helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    return model, shapes


@pytest.mark.parametrize("seqlens, seq, attrs, rotary", [
    ([0, 4], 1, {}, False),                      # first token of one sequence, fifth of another
    ([6, 2], 1, {}, True),                       # decoding with rotary at the runtime position
    ([5], 3, {}, True),                          # three new tokens at 3..5 (ONNX Runtime
    ([2], 3, {}, False),                         # takes S > 1 after a past for batch 1 only)
    ([7], 2, {"local_window_size": 3}, False),
    ([7], 1, {"softcap": 3.0, "scale": 0.3}, True),
])
def test_shared_buffer_gqa_matches_onnxruntime(seqlens, seq, attrs, rotary):
    batch = len(seqlens)
    model, shapes = _model(batch, seq, attrs, rotary)
    feeds = {n: _f(*s) for n, s in shapes.items()}
    feeds["sl"] = np.array(seqlens, np.int32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip(["y", "pk_out", "pv_out"], session.run(None, feeds)))
    graph = import_model(model)
    assert graph.outputs["pk_out"].shape == (batch, KV_HEADS, CAPACITY, HEAD)
    got = run(graph, feeds)
    np.testing.assert_allclose(got["y"], want["y"], atol=1e-4, rtol=1e-3)
    for b, last in enumerate(seqlens):
        start = last + 1 - seq
        for name, past in (("pk_out", "pk"), ("pv_out", "pv")):
            # the rows before this step kept, the new ones written at start..last, the rest
            # of our buffer untouched (ONNX Runtime leaves those unspecified)
            np.testing.assert_array_equal(got[name][b, :, :start], feeds[past][b, :, :start])
            np.testing.assert_allclose(got[name][b, :, start:last + 1],
                                       want[name][b, :, start:last + 1], atol=1e-5, rtol=1e-5)
            np.testing.assert_array_equal(got[name][b, :, last + 1:],
                                          feeds[past][b, :, last + 1:])
    if not rotary:  # the new keys are k itself, placed exactly
        k = feeds["k"].reshape(batch, seq, KV_HEADS, HEAD).transpose(0, 2, 1, 3)
        for b, last in enumerate(seqlens):
            np.testing.assert_array_equal(got["pk_out"][b, :, last + 1 - seq:last + 1], k[b])
