"""A tiny decoder whose KV cache grows by Concat, named as optimum exports name it."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def concat_decoder(path, vocab=32, width=8, seed=4):
    """One attention layer whose cache grows by Concat, optimum's names: past_key_values.0.key
    / .value in, present.0.key / .value out, attention_mask over past and new tokens. No
    causal mask (the prompt's tokens see each other): both sides compute the same function,
    which is all a parity test needs."""
    rng = np.random.default_rng(seed)
    inits = {"emb": rng.standard_normal((vocab, width)).astype(np.float32),
             "wq": rng.standard_normal((width, width)).astype(np.float32),
             "wk": rng.standard_normal((width, width)).astype(np.float32),
             "wv": rng.standard_normal((width, width)).astype(np.float32),
             "wo": rng.standard_normal((width, vocab)).astype(np.float32),
             "kshape": np.array([1, 1, -1, width], np.int64),
             "one": np.array(1.0, np.float32), "big": np.array(-1e9, np.float32),
             "scale": np.array(1 / np.sqrt(width), np.float32),
             "axes01": np.array([1, 2], np.int64)}
    n = helper.make_node
    nodes = [
        n("Gather", ["emb", "input_ids"], ["h"]),                         # [1, S, W]
        n("MatMul", ["h", "wq"], ["q0"]), n("Reshape", ["q0", "kshape"], ["q"]),
        n("MatMul", ["h", "wk"], ["k0"]), n("Reshape", ["k0", "kshape"], ["k"]),
        n("MatMul", ["h", "wv"], ["v0"]), n("Reshape", ["v0", "kshape"], ["v"]),
        n("Concat", ["past_key_values.0.key", "k"], ["present.0.key"], axis=2),
        n("Concat", ["past_key_values.0.value", "v"], ["present.0.value"], axis=2),
        n("Transpose", ["present.0.key"], ["kt"], perm=[0, 1, 3, 2]),
        n("MatMul", ["q", "kt"], ["s0"]), n("Mul", ["s0", "scale"], ["s1"]),
        n("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
        n("Sub", ["one", "mf"], ["mi"]), n("Mul", ["mi", "big"], ["mb0"]),
        n("Unsqueeze", ["mb0", "axes01"], ["mb"]),                         # [1, 1, 1, T]
        n("Add", ["s1", "mb"], ["s2"]), n("Softmax", ["s2"], ["p"], axis=-1),
        n("MatMul", ["p", "present.0.value"], ["o"]),                      # [1, 1, S, W]
        n("MatMul", ["o", "wo"], ["l4"]),
        n("Squeeze", ["l4", "sq"], ["logits"]),
    ]
    inits["sq"] = np.array([1], np.int64)
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
           helper.make_tensor_value_info("past_key_values.0.key", TensorProto.FLOAT,
                                         ["batch", 1, "past", width]),
           helper.make_tensor_value_info("past_key_values.0.value", TensorProto.FLOAT,
                                         ["batch", 1, "past", width])]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", vocab]),
            helper.make_tensor_value_info("present.0.key", TensorProto.FLOAT,
                                          ["batch", 1, "total", width]),
            helper.make_tensor_value_info("present.0.value", TensorProto.FLOAT,
                                          ["batch", 1, "total", width])]
    graph = helper.make_graph(nodes, "concat_decoder", ins, outs,
                              [numpy_helper.from_array(a, k) for k, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    save(model, path)
