"""A tiny BERT-style ONNX model with a symbolic `sequence` (and `batch`) axis, built with
onnx.helper: word + position embeddings (positions sliced out of a 64-row table by the
sequence length, as the legacy exporter writes it), layer norm, one self-attention layer whose
reshapes take their shape from Shape ops, the additive mask, a feed-forward block with GELU.
Seeded random weights; used by the dynamic-shape tests."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, VOCAB, POSITIONS, FFN = 16, 2, 50, 64, 32


def build(path: str | Path, seed: int = 0, batch: str | int = 1) -> Path:
    rng = np.random.default_rng(seed)
    head = HIDDEN // HEADS

    def weight(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, np.int64), name)

    inits = [weight("word", VOCAB, HIDDEN), weight("position", POSITIONS, HIDDEN),
             weight("ln_scale", HIDDEN, scale=1.0), weight("ln_bias", HIDDEN),
             weight("wq", HIDDEN, HIDDEN), weight("wk", HIDDEN, HIDDEN),
             weight("wv", HIDDEN, HIDDEN), weight("wo", HIDDEN, HIDDEN),
             weight("w1", HIDDEN, FFN), weight("w2", FFN, HIDDEN),
             ints("zero", [0]), ints("one", [1]), ints("axis1", [1]), ints("heads", [HEADS]),
             ints("head_dim", [head]), ints("hidden", [HIDDEN]), ints("perm_dummy", [0]),
             numpy_helper.from_array(np.array(1.0, np.float32), "f_one"),
             numpy_helper.from_array(np.array(-10000.0, np.float32), "f_big"),
             numpy_helper.from_array(np.array(np.sqrt(head), np.float32), "f_scale"),
             numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "f_sqrt2"),
             numpy_helper.from_array(np.array(0.5, np.float32), "f_half")]
    n = helper.make_node
    nodes = [
        n("Shape", ["input_ids"], ["ids_shape"]),
        n("Gather", ["ids_shape", "zero"], ["batch_1"], axis=0),
        n("Gather", ["ids_shape", "one"], ["seq_1"], axis=0),
        # positions: the first `sequence` rows of the table
        n("Slice", ["position", "zero", "seq_1", "zero"], ["pos_rows"]),
        n("Gather", ["word", "input_ids"], ["words"], axis=0),
        n("Add", ["words", "pos_rows"], ["embedded"]),
        n("LayerNormalization", ["embedded", "ln_scale", "ln_bias"], ["x"], axis=-1,
          epsilon=1e-5),
        n("Concat", ["batch_1", "seq_1", "heads", "head_dim"], ["split_shape"], axis=0),
        n("Concat", ["batch_1", "seq_1", "hidden"], ["merge_shape"], axis=0),
    ]
    for p in ("q", "k", "v"):
        nodes += [n("MatMul", ["x", f"w{p}"], [f"{p}_flat"]),
                  n("Reshape", [f"{p}_flat", "split_shape"], [f"{p}_split"]),
                  n("Transpose", [f"{p}_split"], [f"{p}_t"],
                    perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
    nodes += [
        n("MatMul", ["q_t", "k_t"], ["scores_raw"]),
        n("Div", ["scores_raw", "f_scale"], ["scores_scaled"]),
        # mask [batch, seq] -> [batch, 1, 1, seq] of 0 / -10000
        n("Unsqueeze", ["attention_mask", "axis1"], ["mask_1"]),
        n("Unsqueeze", ["mask_1", "axis1"], ["mask_2"]),
        n("Cast", ["mask_2"], ["mask_f"], to=TensorProto.FLOAT),
        n("Sub", ["f_one", "mask_f"], ["mask_inv"]),
        n("Mul", ["mask_inv", "f_big"], ["mask_add"]),
        n("Add", ["scores_scaled", "mask_add"], ["scores"]),
        n("Softmax", ["scores"], ["probs"], axis=-1),
        n("MatMul", ["probs", "v_t"], ["context_t"]),
        n("Transpose", ["context_t"], ["context_s"], perm=[0, 2, 1, 3]),
        n("Reshape", ["context_s", "merge_shape"], ["context"]),
        n("MatMul", ["context", "wo"], ["attn_out"]),
        n("Add", ["attn_out", "x"], ["h"]),
        n("MatMul", ["h", "w1"], ["ff1"]),
        n("Div", ["ff1", "f_sqrt2"], ["ff1_s"]),
        n("Erf", ["ff1_s"], ["ff1_e"]),
        n("Add", ["ff1_e", "f_one"], ["ff1_p"]),
        n("Mul", ["ff1", "ff1_p"], ["ff1_m"]),
        n("Mul", ["ff1_m", "f_half"], ["ff1_g"]),
        n("MatMul", ["ff1_g", "w2"], ["ff2"]),
        n("Add", ["ff2", "h"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_bert",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       [batch, "sequence", HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = Path(path)
    onnx.save(model, path)
    return path
