"""An LSTM inside a nested If, fed a 5-D tensor reshaped to 3-D: the shape of a voice-activity
model (Silero VAD) converted with `--const sr=16000` (issue 31). The outer If tests the sample
rate, the inner If a graph input (known at conversion or not) or a dim of the state input; the
chosen branch reshapes x [1, batch, 1, time, features] to [time, batch, features] by a target
computed from Shape ops or given with 0 and -1, and runs an LSTM whose initial states are graph
inputs, with sequence_lens absent, computed, or shorter for some rows. Each variant is compared
with ONNX Runtime running the model; a few also through `verify`, as the user runs them."""
from __future__ import annotations

import itertools
import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from cli.main import main
from converter.importers.onnx import import_model
from converter.runtimes.execute import run

from .helpers import ops_of, ort_outputs

F32, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32
HIDDEN, FEATURES = 5, 4


def _const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.asarray(value), name))


def _lstm_branch(tag: str, rng, *, direction: str, target: str, seq_lens: str, steps: int,
                 batch: int, initial_state: bool) -> onnx.GraphProto:
    """Reshape x to [time, batch, features] and run an LSTM on it; outputs Y, Y_h, Y_c."""
    dirs = 2 if direction == "bidirectional" else 1
    nodes, inits = [], []
    if target == "shape":  # [dims 3, 1, 4 of Shape(x)], as exporters write it
        nodes += [helper.make_node("Shape", ["x"], [f"{tag}_sx"]),
                  _const(f"{tag}_at", np.array([3, 1, 4], np.int64)),
                  helper.make_node("Gather", [f"{tag}_sx", f"{tag}_at"], [f"{tag}_to"], axis=0)]
    elif target == "zero_minus_one":  # -1 infers time, 0 copies x's dim 1 (batch)
        nodes.append(_const(f"{tag}_to", np.array([-1, 0, FEATURES], np.int64)))
    else:
        nodes.append(_const(f"{tag}_to", np.array([steps, batch, FEATURES], np.int64)))
    nodes.append(helper.make_node("Reshape", ["x", f"{tag}_to"], [f"{tag}_x3"]))
    for name, shape, scale in (("W", (dirs, 4 * HIDDEN, FEATURES), 0.5),
                               ("R", (dirs, 4 * HIDDEN, HIDDEN), 0.5),
                               ("B", (dirs, 8 * HIDDEN), 0.1)):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), f"{tag}_{name}"))
    lens = ""
    if seq_lens == "computed":  # every row the whole sequence: Expand(time, [batch]) as int32
        nodes += [helper.make_node("Shape", [f"{tag}_x3"], [f"{tag}_s3"]),
                  _const(f"{tag}_0", np.array([0], np.int64)),
                  _const(f"{tag}_1", np.array([1], np.int64)),
                  _const(f"{tag}_2", np.array([2], np.int64)),
                  helper.make_node("Slice", [f"{tag}_s3", f"{tag}_0", f"{tag}_1"], [f"{tag}_t"]),
                  helper.make_node("Slice", [f"{tag}_s3", f"{tag}_1", f"{tag}_2"], [f"{tag}_b"]),
                  helper.make_node("Expand", [f"{tag}_t", f"{tag}_b"], [f"{tag}_t64"]),
                  helper.make_node("Cast", [f"{tag}_t64"], [f"{tag}_L"], to=I32)]
        lens = f"{tag}_L"
    elif seq_lens == "uneven":  # the first row whole, the others two steps shorter
        nodes.append(_const(f"{tag}_L", np.array([steps] + [steps - 2] * (batch - 1), np.int32)))
        lens = f"{tag}_L"
    states = ["h", "c"] if initial_state else []
    outs = [f"{tag}_Y", f"{tag}_Yh", f"{tag}_Yc"]
    nodes.append(helper.make_node(
        "LSTM", [f"{tag}_x3", f"{tag}_W", f"{tag}_R", f"{tag}_B", lens] + states, outs,
        hidden_size=HIDDEN, direction=direction))
    return helper.make_graph(nodes, tag, [], [helper.make_tensor_value_info(o, F32, None)
                                              for o in outs], inits)


def vad_like_model(*, direction="forward", target="shape", seq_lens="absent", inner="input",
                   steps=6, batch=2, seed=0) -> onnx.ModelProto:
    """If(sr == 16000, If(inner condition, LSTM with the states h, c; LSTM from zero states),
    LSTM with other weights). Inputs x [1, batch, 1, time, features] (symbolic dims 'batch'
    and 'time'), sr, h and c [directions, batch, hidden], and with inner='input' mode (the
    inner condition is mode > 0); with inner='shape' the condition is Shape(h)[0] ==
    directions, as Silero's state check."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    kw = dict(direction=direction, target=target, seq_lens=seq_lens, steps=steps, batch=batch)
    if inner == "input":
        condition = [_const("zero", np.array(0, np.int64)),
                     helper.make_node("Greater", ["mode", "zero"], ["inner_cond"])]
    else:
        condition = [helper.make_node("Shape", ["h"], ["h_shape"]),
                     _const("first", np.array(0, np.int64)),
                     helper.make_node("Gather", ["h_shape", "first"], ["h_dirs"], axis=0),
                     _const("dirs", np.array(dirs, np.int64)),
                     helper.make_node("Equal", ["h_dirs", "dirs"], ["inner_cond"])]
    inner_if = helper.make_node(
        "If", ["inner_cond"], ["iy", "iyh", "iyc"],
        then_branch=_lstm_branch("a", rng, initial_state=True, **kw),
        else_branch=_lstm_branch("b", rng, initial_state=False, **kw))
    then = helper.make_graph(condition + [inner_if], "rate_16k", [],
                             [helper.make_tensor_value_info(o, F32, None)
                              for o in ("iy", "iyh", "iyc")])
    other = _lstm_branch("k", rng, initial_state=True, **kw)
    nodes = [_const("rate", np.array(16000, np.int64)),
             helper.make_node("Equal", ["sr", "rate"], ["is_16k"]),
             helper.make_node("If", ["is_16k"], ["y", "yh", "yc"], then_branch=then,
                              else_branch=other)]
    inputs = [helper.make_tensor_value_info("x", F32, [1, "batch", 1, "time", FEATURES]),
              helper.make_tensor_value_info("sr", I64, []),
              helper.make_tensor_value_info("h", F32, [dirs, "batch", HIDDEN]),
              helper.make_tensor_value_info("c", F32, [dirs, "batch", HIDDEN])]
    if inner == "input":
        inputs.append(helper.make_tensor_value_info("mode", I64, []))
    graph = helper.make_graph(nodes, "vad_like", inputs,
                              [helper.make_tensor_value_info(n, F32, None)
                               for n in ("y", "yh", "yc")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _feeds(direction: str, steps: int, batch: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    return {"x": rng.standard_normal((1, batch, 1, steps, FEATURES)).astype(np.float32),
            "h": rng.standard_normal((dirs, batch, HIDDEN)).astype(np.float32),
            "c": rng.standard_normal((dirs, batch, HIDDEN)).astype(np.float32)}


# inner: 'shape' (Silero's state check, known from the shapes), 'known' (mode given at
# conversion) or 'run-time' (mode a graph input: both inner branches, then `where`).
_INNER = ("shape", "known", "run-time")
_CASES = [(d, t, s, _INNER[i % 3]) for i, (d, t, s) in enumerate(itertools.product(
    ("forward", "reverse", "bidirectional"), ("shape", "zero_minus_one", "constant"),
    ("absent", "computed", "uneven")))]


@pytest.mark.parametrize("direction, target, seq_lens, inner", _CASES)
def test_lstm_in_nested_if_on_a_reshaped_5d_input_matches_onnx_runtime(direction, target,
                                                                       seq_lens, inner):
    steps, batch = 6, 2
    model = vad_like_model(direction=direction, target=target, seq_lens=seq_lens,
                           inner="shape" if inner == "shape" else "input", steps=steps,
                           batch=batch)
    feeds = _feeds(direction, steps, batch)
    known = {"sr": np.array(16000, np.int64)}
    modes = [np.array(1, np.int64), np.array(0, np.int64)] if inner != "shape" else [None]
    if inner == "known":
        graphs = [(mode, {**known, "mode": mode}) for mode in modes]
    else:
        graphs = [(mode, known) for mode in modes]
    for mode, given in graphs:
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        graph = import_model(copy, input_shapes={k: v.shape for k, v in feeds.items()},
                             known_inputs=given)
        graph_feeds = dict(feeds) if inner != "run-time" else {**feeds, "mode": mode}
        got = run(graph, graph_feeds)
        source_feeds = {**feeds, "sr": known["sr"]}
        if mode is not None:
            source_feeds["mode"] = mode
        want = ort_outputs(model, source_feeds)
        for info, expected in zip(model.graph.output, want):
            have = got[info.name]
            assert have.shape == expected.shape, info.name
            np.testing.assert_allclose(have, expected, rtol=1e-5, atol=1e-6, err_msg=info.name)
        # A condition known at conversion keeps one branch; a run-time one keeps both.
        assert ("where" in ops_of(graph)) == (inner == "run-time")


@pytest.mark.parametrize("direction, seq_lens", [("forward", "absent"),
                                                 ("bidirectional", "uneven")])
def test_verify_with_const_sample_rate_passes(tmp_path, direction, seq_lens):
    """What the user ran: `verify MODEL --const sr=16000 --dim ...` on a model of that
    shape, judged against ONNX Runtime."""
    path = tmp_path / "vad_like.onnx"
    onnx.save(vad_like_model(direction=direction, seq_lens=seq_lens, inner="shape"), path)
    result = CliRunner().invoke(main, ["verify", str(path), "--const", "sr=16000", "--dim",
                                       "batch=2", "--dim", "time=6", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["passed"] is True, report
