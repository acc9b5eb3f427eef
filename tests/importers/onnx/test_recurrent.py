"""ONNX GRU, LSTM and RNN through import and the executor.

Where WebNN's gru/lstm say exactly what ONNX says, the import is one native op (checked by op
type); everything else (other activations, clip, input_forget, peepholes, uneven
sequence_lens, RNN) is unrolled per step. Both are compared with ONNX Runtime on random inputs,
and a few single steps are checked against ONNX's formulas by hand.
"""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from converter.errors import UnsupportedError
from converter.runtimes.execute import run
from converter.importers.onnx import import_model

RNG = np.random.default_rng(11)
_GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}


def _rnn_model(kind: str, *, steps=4, batch=2, size=3, hidden=5, direction="forward",
               layout=0, bias=True, initial=False, peepholes=False, seq_lens=None,
               known_weights=True, outputs=("Y", "Y_h", "Y_c"), **attrs):
    """An ONNX GRU/LSTM/RNN with random weights; returns (model, feeds)."""
    dirs = 2 if direction == "bidirectional" else 1
    g = _GATES[kind]
    x_shape = (steps, batch, size) if layout == 0 else (batch, steps, size)
    state_shape = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    values = {"X": RNG.standard_normal(x_shape).astype(np.float32),
              "W": RNG.standard_normal((dirs, g * hidden, size)).astype(np.float32) * 0.5,
              "R": RNG.standard_normal((dirs, g * hidden, hidden)).astype(np.float32) * 0.5}
    names = ["X", "W", "R", "", "", ""] + (["", "", ""][: 2 if kind == "LSTM" else 0])
    if bias:
        values["B"], names[3] = RNG.standard_normal((dirs, 2 * g * hidden)).astype(
            np.float32), "B"
    if seq_lens is not None:
        values["L"], names[4] = np.array(seq_lens, np.int32), "L"
    if initial:
        values["H0"], names[5] = RNG.standard_normal(state_shape).astype(np.float32), "H0"
        if kind == "LSTM":
            values["C0"], names[6] = RNG.standard_normal(state_shape).astype(np.float32), "C0"
    if peepholes:
        values["P"], names[7] = RNG.standard_normal((dirs, 3 * hidden)).astype(np.float32), "P"
    n_out = 3 if kind == "LSTM" else 2
    outs = [o if o in outputs else "" for o in ("Y", "Y_h", "Y_c")[:n_out]]
    node = helper.make_node(kind, names, outs, hidden_size=hidden, direction=direction,
                            layout=layout, **attrs)
    weights = {"W", "R", "B", "P"} if known_weights else set()
    feeds = {k: v for k, v in values.items() if k not in weights}
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in feeds.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in values.items() if k in weights]
    out_info = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs if o]
    m = helper.make_model(helper.make_graph([node], "rnn", ins, out_info, inits),
                          opset_imports=[helper.make_opsetid("", 22)])
    m.ir_version = 10
    return m, feeds


def _compare(model, feeds, atol=1e-4, rtol=1e-3):
    """ONNX Runtime's outputs against the imported graph's; returns the graph. ONNX Runtime
    has no batch-major (layout 1) kernels: those models are judged by ONNX's reference."""
    if any(a.name == "layout" and a.i == 1 for a in model.graph.node[0].attribute):
        want = ReferenceEvaluator(model).run(None, feeds)
    else:
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)
    graph = import_model(model)
    got = run(graph, feeds)
    for w, info in zip(want, model.graph.output):
        have = got[info.name]
        assert have.shape == w.shape, (info.name, have.shape, w.shape)
        np.testing.assert_allclose(have, w, atol=atol, rtol=rtol, err_msg=info.name)
    return graph


def _ops(graph) -> list[str]:
    return [op.op_type for op in graph.operations]


# -- the native path ----------------------------------------------------------------------------
@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_is_one_native_op(lbr, direction):
    model, feeds = _rnn_model("GRU", direction=direction, initial=True, linear_before_reset=lbr)
    graph = _compare(model, feeds)
    (gru,) = [op for op in graph.operations if op.op_type == "gru"]
    assert gru.attrs["resetAfter"] is bool(lbr)
    assert gru.attr("direction") == {"forward": "forward", "reverse": "backward",
                                     "bidirectional": "both"}[direction]
    assert gru.attr("returnSequence") is True


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_is_one_native_op_with_runtime_weights_and_layout_1(direction):
    model, feeds = _rnn_model("LSTM", direction=direction, layout=1, initial=True,
                              known_weights=False)
    graph = _compare(model, feeds)
    # B is cut into bias and recurrentBias at runtime: one slice each.
    assert _ops(graph).count("lstm") == 1 and _ops(graph).count("slice") == 2


def test_lstm_only_hidden_output_has_no_sequence():
    model, feeds = _rnn_model("LSTM", outputs=("Y_h",))
    graph = _compare(model, feeds)
    (lstm,) = [op for op in graph.operations if op.op_type == "lstm"]
    assert lstm.attr("returnSequence") is False and len(lstm.outputs) == 2


def test_full_known_sequence_lens_keep_the_native_op():
    model, feeds = _rnn_model("GRU", seq_lens=[4, 4], steps=4)
    model.graph.initializer.append(numpy_helper.from_array(feeds.pop("L"), "L"))
    del model.graph.input[1]
    graph = _compare(model, feeds)
    assert "gru" in _ops(graph)


def test_bidirectional_with_different_activations_is_two_native_ops():
    model, feeds = _rnn_model("GRU", direction="bidirectional",
                              activations=["Sigmoid", "Tanh", "Sigmoid", "Relu"])
    graph = _compare(model, feeds)
    directions = [op.attr("direction") for op in graph.operations if op.op_type == "gru"]
    assert directions == ["forward", "backward"]


def test_lstm_peepholes_with_zero_output_part_stay_native():
    model, feeds = _rnn_model("LSTM", peepholes=True, hidden=3)
    p = numpy_helper.to_array(model.graph.initializer[-1]).copy()
    p[:, 3:6] = 0  # the output gate's peepholes (P is i, o, f)
    model.graph.initializer[-1].CopyFrom(numpy_helper.from_array(p, "P"))
    graph = _compare(model, feeds)
    assert "lstm" in _ops(graph)


# -- the unrolled path --------------------------------------------------------------------------
@pytest.mark.parametrize("kind, attrs", [
    ("LSTM", dict(activations=["HardSigmoid", "LeakyRelu", "Softsign"],
                  activation_alpha=[0.3, 0.05], activation_beta=[0.4])),
    ("LSTM", dict(activations=["Sigmoid", "Elu", "Softplus"], activation_alpha=[0.7])),
    ("LSTM", dict(clip=0.5)),
    ("LSTM", dict(input_forget=1)),
    ("GRU", dict(activations=["HardSigmoid", "ThresholdedRelu"], activation_alpha=[0.25, 0.1],
                 activation_beta=[0.45])),
    ("GRU", dict(clip=0.3, linear_before_reset=1)),
    ("RNN", dict()),
    ("RNN", dict(activations=["Relu"])),
])
def test_unrolled_matches_onnxruntime(kind, attrs):
    model, feeds = _rnn_model(kind, initial=True, **attrs)
    graph = _compare(model, feeds)
    assert not {"gru", "lstm"} & set(_ops(graph))


def test_lstm_peepholes_are_unrolled_because_onnx_reads_the_new_cell_state():
    model, feeds = _rnn_model("LSTM", direction="bidirectional", peepholes=True, initial=True)
    graph = _compare(model, feeds)
    assert "lstm" not in _ops(graph)


@pytest.mark.parametrize("kind, direction", [("LSTM", "forward"), ("GRU", "reverse"),
                                             ("RNN", "bidirectional")])
def test_uneven_runtime_sequence_lens(kind, direction):
    model, feeds = _rnn_model(kind, direction=direction, steps=5, batch=3, seq_lens=[5, 2, 3],
                              initial=True)
    graph = _compare(model, feeds)
    assert "where" in _ops(graph)
    y = run(graph, feeds)["Y"]
    assert not y[2:, :, 1].any() and not y[3:, :, 2].any()  # zeros past each sequence's end


def test_layout_1_unrolled():
    model, feeds = _rnn_model("RNN", direction="bidirectional", layout=1, initial=True)
    _compare(model, feeds)


def test_unknown_activation_is_unsupported():
    model, _ = _rnn_model("GRU", activations=["Sigmoid", "Swish"])
    with pytest.raises(UnsupportedError) as info:
        import_model(model)
    assert "activation 'swish' has no WebNN equivalent" in str(info.value)


# -- single steps by hand -----------------------------------------------------------------------
def _single(kind, x, w, r, b, outputs, **attrs):
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("W", w), ("R", r), ("B", b))]
    names = ["X", "W", "R", "B"]
    node = helper.make_node(kind, names, list(outputs), **attrs)
    x = np.array(x, np.float32)
    m = helper.make_model(
        helper.make_graph([node], "one", [helper.make_tensor_value_info("X", 1, x.shape)],
                          [helper.make_tensor_value_info(o, 1, None) for o in outputs if o],
                          inits), opset_imports=[helper.make_opsetid("", 22)])
    return run(import_model(m), {"X": x})


def test_rnn_two_steps_by_hand():
    # H1 = relu(2 * 1 + 0.5 * 0 + 0.25 + 0.75) = 3; H2 = relu(2 * -1 + 0.5 * 3 + 1) = 0.5
    got = _single("RNN", [[[1.0]], [[-1.0]]], [[[2.0]]], [[[0.5]]], [[0.25, 0.75]], ["Y", "Y_h"],
                  hidden_size=1, activations=["Relu"])
    np.testing.assert_allclose(got["Y"].reshape(-1), [3.0, 0.5], rtol=1e-6)
    np.testing.assert_allclose(got["Y_h"].reshape(-1), [0.5], rtol=1e-6)


def test_gru_one_step_by_hand():
    # hidden 1, input 1, H0 = 0, zero weights on h: z = sigmoid(0) = 0.5, r irrelevant,
    # n = tanh(Wh x + Wbh) = tanh(2 * 0.5 + 0) = tanh(1); H = (1 - z) n = 0.5 tanh(1)
    w = [[[0.0], [0.0], [2.0]]]
    got = _single("GRU", [[[0.5]]], w, np.zeros((1, 3, 1)), np.zeros((1, 6)), ["", "Y_h"],
                  hidden_size=1)
    np.testing.assert_allclose(got["Y_h"].reshape(-1), [0.5 * np.tanh(1.0)], rtol=1e-6)


def test_lstm_output_peephole_reads_the_new_cell_state_by_hand():
    # hidden 1, one step, x = 1, H0 = C0 = 0, W = [i, o, f, c] = [0, 0, 0, 1], R = 0, B = 0,
    # P = [i, o, f] = [0, 2, 0]: i = f = 0.5, c = tanh(1), C = 0.5 tanh(1);
    # ONNX: o = sigmoid(2 * C) (new cell state; WebNN's lstmCell would use C0 = 0, o = 0.5)
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (
        ("W", [[[0.0], [0.0], [0.0], [1.0]]]), ("R", np.zeros((1, 4, 1))),
        ("B", np.zeros((1, 8))), ("P", [[0.0, 2.0, 0.0]]))]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "", "", "P"], ["", "Y_h", "Y_c"],
                            hidden_size=1)
    m = helper.make_model(helper.make_graph(
        [node], "peep", [helper.make_tensor_value_info("X", 1, [1, 1, 1])],
        [helper.make_tensor_value_info(o, 1, None) for o in ("Y_h", "Y_c")], inits),
        opset_imports=[helper.make_opsetid("", 22)])
    got = run(import_model(m), {"X": np.ones((1, 1, 1), np.float32)})
    c = 0.5 * np.tanh(1.0)
    o = 1 / (1 + np.exp(-2 * c))
    np.testing.assert_allclose(got["Y_c"].reshape(-1), [c], rtol=1e-6)
    np.testing.assert_allclose(got["Y_h"].reshape(-1), [o * np.tanh(c)], rtol=1e-6)

