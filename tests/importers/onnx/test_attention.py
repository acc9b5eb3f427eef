"""Transformer ops through import and the executor: ai.onnx Attention and RotaryEmbedding, and
the com.microsoft contrib ops (MultiHeadAttention, GroupQueryAttention, RotaryEmbedding, the
(Skip)(Simplified)LayerNormalization family, the Gelu family, FusedMatMul).

The contrib ops are defined by ONNX Runtime's kernels, so each is compared with ONNX Runtime on
random inputs; small cases are also checked against the formulas by hand.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model

RNG = np.random.default_rng(5)
MS = "com.microsoft"


def _f(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(node, inputs: dict, outputs, inits: dict | None = None, opset: int = 23):
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs.items()]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    init = [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()]
    m = helper.make_model(helper.make_graph([node], "t", ins, outs, init),
                          opset_imports=[helper.make_opsetid("", opset),
                                         helper.make_opsetid(MS, 1)])
    m.ir_version = 10
    return m


def _compare(model, feeds, atol=1e-4, rtol=1e-3):
    """ONNX Runtime first (import releases the initializers' bytes from the proto)."""
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    graph = import_model(model)
    got = run(graph, feeds)
    for w, info in zip(want, model.graph.output):
        assert got[info.name].shape == w.shape, info.name
        np.testing.assert_allclose(got[info.name], w, atol=atol, rtol=rtol, err_msg=info.name)
    return graph


def _unsupported(model, words: str):
    with pytest.raises(UnsupportedError) as info:
        import_model(model)
    assert words in str(info.value)


def _ops(graph) -> list[str]:
    return [op.op_type for op in graph.operations]


# -- ai.onnx Attention and RotaryEmbedding by hand ----------------------------------------------
def test_attention_picks_the_value_of_the_matching_key():
    # One query [10, 0] and keys [1, 0], [0, 1] with scale 1: softmax([10, 0]) ~ [1, 4.5e-5]
    q = np.array([[[[10.0, 0.0]]]], np.float32)
    k = np.array([[[[1.0, 0.0], [0.0, 1.0]]]], np.float32)
    v = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], scale=1.0)
    got = run(import_model(_model(node, {"q": q, "k": k, "v": v}, ["y"])),
              {"q": q, "k": k, "v": v})["y"]
    p = 1 / (1 + np.exp(-10.0))
    np.testing.assert_allclose(got.reshape(-1), [p * 1 + (1 - p) * 3, p * 2 + (1 - p) * 4],
                               rtol=1e-5)


def test_attention_fully_masked_row_is_zero():
    # A boolean mask with a row of False: ONNX defines that row's output as 0, not NaN.
    q, k, v = _f(1, 1, 2, 4), _f(1, 1, 3, 4), _f(1, 1, 3, 4)
    mask = np.array([[True, False, True], [False, False, False]])
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y"])
    m = _model(node, {"q": q, "k": k, "v": v}, ["y"], {"m": mask})
    y = run(import_model(m), {"q": q, "k": k, "v": v})["y"]
    assert not np.isnan(y).any() and not y[0, 0, 1].any() and y[0, 0, 0].any()


def test_rotary_embedding_rotates_pairs_by_hand():
    # cos = 0, sin = 1 rotates each pair (x1, x2) by 90 degrees: (-x2, x1).
    x = np.array([[[[1.0, 2.0, 3.0, 4.0]]]], np.float32)  # [B, N, S, H] = [1, 1, 1, 4]
    cos, sin = np.zeros((1, 1, 2), np.float32), np.ones((1, 1, 2), np.float32)
    for interleaved, want in ((0, [-3.0, -4.0, 1.0, 2.0]), (1, [-2.0, 1.0, -4.0, 3.0])):
        node = helper.make_node("RotaryEmbedding", ["x", "c", "s"], ["y"],
                                interleaved=interleaved)
        m = _model(node, {"x": x}, ["y"], {"c": cos, "s": sin})
        np.testing.assert_allclose(run(import_model(m), {"x": x})["y"].reshape(-1), want)


def test_attention_double_softmax_precision_is_unsupported():
    q = _f(1, 1, 2, 4)
    node = helper.make_node("Attention", ["q", "q", "q"], ["y"],
                            softmax_precision=TensorProto.DOUBLE)
    _unsupported(_model(node, {"q": q}, ["y"]), "softmax_precision DOUBLE")


# -- com.microsoft MultiHeadAttention -----------------------------------------------------------
B, S, L, N, H = 2, 3, 5, 2, 4


@pytest.mark.parametrize("name, inputs, extra, attrs", [
    ("plain", ["q", "k", "v"], {}, {}),
    ("bias", ["q", "k", "v", "b"], {"b": _f(3 * N * H)}, {}),
    ("scale", ["q", "k", "v"], {}, {"scale": 0.3}),
    ("padding mask", ["q", "k", "v", "", "m"],
     {"m": np.array([[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]], np.int32)}, {}),
    ("key lengths", ["q", "k", "v", "", "m"], {"m": np.array([3, 5], np.int32)},
     {"mask_filter_value": -1000.0}),
    ("attention bias", ["q", "k", "v", "", "", "ab"], {"ab": _f(1, N, S, L)}, {}),
    ("4-D key and value", ["q", "k4", "v4"], {"k4": _f(B, N, L, H), "v4": _f(B, N, L, H)}, {}),
])
def test_multi_head_attention_matches_onnxruntime(name, inputs, extra, attrs):
    feeds = {"q": _f(B, S, N * H), "k": _f(B, L, N * H), "v": _f(B, L, N * H), **extra}
    feeds = {n: a for n, a in feeds.items() if n in inputs}
    node = helper.make_node("MultiHeadAttention", inputs, ["y"], domain=MS, num_heads=N,
                            **attrs)
    _compare(_model(node, feeds, ["y"]), feeds)


def test_multi_head_attention_causal_with_past_and_present():
    feeds = {"q": _f(B, S, N * H), "k": _f(B, S, N * H), "v": _f(B, S, N * H),
             "pk": _f(B, N, 2, H), "pv": _f(B, N, 2, H)}
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "", "", "pk", "pv"],
                            ["y", "present_k", "present_v"], domain=MS, num_heads=N,
                            unidirectional=1)
    graph = _compare(_model(node, feeds, ["y", "present_k", "present_v"]), feeds)
    assert graph.outputs["present_k"].shape == (B, N, 2 + S, H)


@pytest.mark.parametrize("packing", ["qkv", "kv"])
def test_multi_head_attention_packed_inputs_equal_separate_inputs(packing):
    # ONNX Runtime's CPU kernel has no packed layouts; a packed [B, S, N, 3, H] query (or
    # [B, L, N, 2, H] key) must give what the same q, k, v give unpacked (ONNX Runtime's).
    q, k, v = _f(B, S, N * H), _f(B, S, N * H), _f(B, S, N * H)
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS,
                            num_heads=N)
    feeds = {"q": q, "k": k, "v": v}
    (want,) = ort.InferenceSession(_model(node, feeds, ["y"]).SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    heads = lambda *ts: np.stack([t.reshape(B, S, N, H) for t in ts], axis=3)  # noqa: E731
    feeds = {"p": heads(q, k, v)} if packing == "qkv" else {"q": q, "p": heads(k, v)}
    node = helper.make_node("MultiHeadAttention", list(feeds), ["y"], domain=MS, num_heads=N)
    got = run(import_model(_model(node, feeds, ["y"])), feeds)["y"]
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)


def test_multi_head_attention_cache_indirection_is_unsupported():
    feeds = {"q": _f(B, S, N * H), "k": _f(B, L, N * H), "v": _f(B, L, N * H),
             "ci": np.zeros((B, 1, L), np.int32)}
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "", "", "", "", "",
                                                   "ci"], ["y"], domain=MS, num_heads=N)
    _unsupported(_model(node, feeds, ["y"]), "cache_indirection")


# -- com.microsoft GroupQueryAttention ----------------------------------------------------------
def _gqa(batch, seq, past, head, attrs, rotary=False, runtime_seqlens=None, position_ids=None):
    heads, kv_heads = 4, 2
    feeds = {"q": _f(batch, seq, heads * head), "k": _f(batch, seq, kv_heads * head),
             "v": _f(batch, seq, kv_heads * head)}
    names = ["q", "k", "v", "", "", "sl", "tsl"]
    total = past + seq
    inits = {"tsl": np.array(total, np.int32)}
    if past:
        feeds["pk"], feeds["pv"] = _f(batch, kv_heads, past, head), _f(batch, kv_heads, past,
                                                                        head)
        names[3:5] = ["pk", "pv"]
    if runtime_seqlens is None:
        inits["sl"] = np.full(batch, total - 1, np.int32)
    else:
        feeds["sl"] = np.array(runtime_seqlens, np.int32)
    if rotary:
        angles = RNG.standard_normal((32, head // 2))
        inits["cos"], inits["sin"] = np.cos(angles).astype(np.float32), \
            np.sin(angles).astype(np.float32)
        names += ["cos", "sin"]
        attrs = {**attrs, "do_rotary": 1}
    if position_ids is not None:
        feeds["pid"] = np.array(position_ids, np.int64)
        names.append("pid")
    node = helper.make_node("GroupQueryAttention", names, ["y", "pk_out", "pv_out"], domain=MS,
                            num_heads=heads, kv_num_heads=kv_heads, **attrs)
    return _model(node, feeds, ["y", "pk_out", "pv_out"], inits), feeds


@pytest.mark.parametrize("batch, seq, past, head, attrs, kw", [
    (2, 4, 0, 8, {}, {}),
    (2, 1, 5, 8, {}, {}),                                      # decoding one token
    (1, 2, 5, 8, {}, {}),
    (2, 4, 0, 8, {}, {"runtime_seqlens": [3, 1]}),             # right-padded prompts
    (2, 4, 0, 8, {"softcap": 2.0, "scale": 0.2}, {}),
    (2, 6, 0, 8, {"local_window_size": 2}, {}),
    (1, 3, 5, 8, {"local_window_size": 3}, {}),
    (2, 4, 0, 8, {"smooth_softmax": 1}, {}),
    (2, 4, 0, 16, {}, {"rotary": True}),
    (2, 1, 3, 16, {"rotary_interleaved": 1}, {"rotary": True}),
    (2, 4, 0, 16, {}, {"rotary": True, "position_ids": [[5, 6, 7, 8]] * 2}),
])
def test_group_query_attention_matches_onnxruntime(batch, seq, past, head, attrs, kw):
    model, feeds = _gqa(batch, seq, past, head, attrs, **kw)
    graph = _compare(model, feeds)
    assert graph.outputs["pk_out"].shape == (batch, 2, past + seq, head)


def test_group_query_attention_shared_kv_buffer_is_unsupported():
    model, _ = _gqa(1, 1, 8, 8, {})
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(5, np.int32), "tsl"))
    _unsupported(model, "shared KV buffer")


# -- rotary, normalizations, Gelu family, FusedMatMul -------------------------------------------
@pytest.mark.parametrize("shape, pos, attrs, half", [
    ((2, 3, 16), [[0, 1, 2], [4, 5, 6]], {"num_heads": 2}, 4),
    ((2, 3, 16), [2], {"num_heads": 2}, 4),                    # one start offset
    ((2, 2, 3, 8), [[0, 1, 2], [4, 5, 6]], {}, 4),             # [B, N, S, H]
    ((2, 3, 16), [[0, 1, 2], [4, 5, 6]], {"num_heads": 2, "interleaved": 1}, 4),
    ((2, 3, 16), [[0, 1, 2], [4, 5, 6]], {"num_heads": 2, "rotary_embedding_dim": 4}, 2),
    ((2, 3, 16), [[0, 1, 2], [4, 5, 6]], {}, 4),               # heads from the caches' width
])
def test_ms_rotary_embedding_matches_onnxruntime(shape, pos, attrs, half):
    angles = RNG.standard_normal((16, half))
    inits = {"c": np.cos(angles).astype(np.float32), "s": np.sin(angles).astype(np.float32)}
    feeds = {"x": _f(*shape), "p": np.array(pos, np.int64)}
    node = helper.make_node("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], domain=MS, **attrs)
    _compare(_model(node, feeds, ["y"], inits), feeds)


def test_simplified_layer_normalization_by_hand():
    # x = [3, 4]: mean of squares 12.5, y = x / sqrt(12.5) * scale
    x = np.array([[3.0, 4.0]], np.float32)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "s"], ["y", "inv"],
                            epsilon=0.0)
    m = _model(node, {"x": x}, ["y", "inv"], {"s": np.array([1.0, 2.0], np.float32)})
    got = run(import_model(m), {"x": x})
    np.testing.assert_allclose(got["y"], [[3 / 12.5 ** 0.5, 8 / 12.5 ** 0.5]], rtol=1e-6)
    np.testing.assert_allclose(got["inv"], [[1 / 12.5 ** 0.5]], rtol=1e-6)


@pytest.mark.parametrize("op, inputs, outputs, attrs", [
    ("SimplifiedLayerNormalization", ["x", "g"], ["y", "inv"], {"epsilon": 1e-3}),
    ("SimplifiedLayerNormalization", ["x", "g2"], ["y"], {"axis": 1}),
    ("SkipSimplifiedLayerNormalization", ["x", "skip", "g", "b"], ["y", "", "inv", "sum"],
     {"epsilon": 1e-5}),
    ("SkipLayerNormalization", ["x", "skip", "g", "b", "b"], ["y", "mean", "inv", "sum"],
     {"epsilon": 1e-5}),
    ("SkipLayerNormalization", ["x", "skip1", "g"], ["y"], {}),  # broadcast skip, no beta
    ("Gelu", ["x"], ["y"], {}),
    ("FastGelu", ["x", "b"], ["y"], {}),
    ("BiasGelu", ["x", "b"], ["y"], {}),
    ("QuickGelu", ["x"], ["y"], {"alpha": 1.3}),
])
def test_contrib_elementwise_matches_onnxruntime(op, inputs, outputs, attrs):
    values = {"x": _f(2, 3, 8), "skip": _f(2, 3, 8), "skip1": _f(3, 8), "g": _f(8),
              "g2": _f(3, 8), "b": _f(8)}
    feeds = {n: values[n] for n in inputs}
    domain = "" if op == "SimplifiedLayerNormalization" else MS
    node = helper.make_node(op, inputs, outputs, domain=domain, **attrs)
    _compare(_model(node, feeds, [o for o in outputs if o], opset=17), feeds)


@pytest.mark.parametrize("op", ["SkipLayerNormalization", "SkipSimplifiedLayerNormalization"])
def test_float16_skip_norms_keep_float32_statistics(op):
    feeds = {"x": (_f(2, 3, 8) * 30).astype(np.float16),
             "skip": (_f(2, 3, 8) * 30).astype(np.float16), "g": _f(8).astype(np.float16)}
    outputs = ["y", "", "inv", "sum"]
    node = helper.make_node(op, ["x", "skip", "g"], outputs, domain=MS)
    model = _model(node, feeds, ["y", "inv", "sum"])
    for info, elem in zip(model.graph.output, (TensorProto.FLOAT16, TensorProto.FLOAT,
                                               TensorProto.FLOAT16)):
        info.type.tensor_type.elem_type = elem
    graph = _compare(model, feeds, atol=1e-2, rtol=1e-2)
    assert graph.outputs["inv"].data_type == "float32"


def test_quick_gelu_by_hand():
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    node = helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, alpha=2.0)
    got = run(import_model(_model(node, {"x": x}, ["y"])), {"x": x})["y"]
    np.testing.assert_allclose(got, x / (1 + np.exp(-2.0 * x)), rtol=1e-6)  # x sigmoid(2x)


def test_fast_gelu_is_the_tanh_approximation():
    x = np.array([1.0], np.float32)
    node = helper.make_node("FastGelu", ["x"], ["y"], domain=MS)
    graph = import_model(_model(node, {"x": x}, ["y"]))
    want = 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (1 + 0.044715)))
    np.testing.assert_allclose(run(graph, {"x": x})["y"], [want], rtol=1e-6)
    assert "gelu" not in _ops(graph)  # WebNN's gelu is the erf form


@pytest.mark.parametrize("a_shape, b_shape, attrs", [
    ((2, 3, 4, 5), (2, 3, 6, 5), {"transB": 1, "alpha": 0.5}),
    ((5, 4), (5, 6), {"transA": 1}),
    ((2, 4, 5), (5, 6), {}),
])
def test_fused_matmul_matches_onnxruntime(a_shape, b_shape, attrs):
    feeds = {"a": _f(*a_shape), "b": _f(*b_shape)}
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, **attrs)
    _compare(_model(node, feeds, ["y"]), feeds)


def test_fused_matmul_trans_batch_is_unsupported():
    feeds = {"a": _f(2, 3, 4), "b": _f(2, 4, 3)}
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transBatchA=1)
    _unsupported(_model(node, feeds, ["y"]), "transBatchA")
