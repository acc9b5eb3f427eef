"""The layout pass and graph state (a streaming model's state inputs and next-state outputs).

With an io layout, a state pair is presented as one (input, output and initial value permuted
alike) when both its ends were traced to one layout, and keeps its shapes otherwise: a pair
with only one end presented made the graph invalid (the state fed back in another layout).
The graphs are a keyword spotter's streaming block: the state is concatenated in front of the
new frame along the time axis, the concatenation is read by a convolution, and its last steps
are the next state. Numbers: the graph before the pass and after it, stepped with their states
carried, and the four int8 wake-word models against LiteRT over 20 steps.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.zoo.fetch import fetch_model
from converter.ir.state import initial_value
from converter.passes.layout import count_transposes, source_layouts
from converter.targets.pipeline import convert_for_target

from .layout_helpers import NHWC_TO_NCHW, conv, layout_pass, same_values, seeded, types

NCHW_TO_NHWC = [0, 2, 3, 1]
INITIAL = seeded((1, 2, 2, 3), 7)  # [n, time, width, channels]: no two axes of one size


def _stream(frame: str):
    """frame 'conv': the new frame is an nhwc convolution's result, so both state ends trace
    to nhwc; 'flat': it is a rank-2 input reshaped to a frame (an audio window), so the
    next-state output traces to no layout."""
    b = GraphBuilder(f"stream_{frame}")
    if frame == "conv":
        x = b.input("x", "float32", [1, 1, 2, 4])
        new = conv(b, x, 4, 3, "nhwc", seed=1)
    else:
        x = b.input("x", "float32", [1, 6])
        new = b.reshape(x, [1, 1, 2, 3])
    state = b.input("st", "float32", [1, 2, 2, 3])
    window = b.concat([state, new], 1)
    following = b.slice(window, [0, 1, 0, 0], [1, 2, 2, 3])
    y = conv(b, window, 3, 5, "nhwc", seed=2)
    graph = b.build({"y": y, "st_next": following})
    graph.declare_state("st", "st_next", initial=INITIAL)
    return graph


def _steps(graph, frames, present_x: bool):
    """y and the next state of each step, carried from the initial value, in nhwc."""
    state = initial_value(graph, graph.state[0])
    presented = graph.inputs["st"].shape != (1, 2, 2, 3)
    out = []
    for frame in frames:
        fed = np.ascontiguousarray(frame.transpose(NHWC_TO_NCHW)) if present_x else frame
        got = converter.run(graph, {"x": fed, "st": state})
        state = got["st_next"]
        y, following = got["y"], got["st_next"]
        if graph.outputs["y"].shape == (1, 5, 3, 2):
            y = y.transpose(NCHW_TO_NHWC)
        if presented:
            following = following.transpose(NCHW_TO_NHWC)
        out.append({"y": np.ascontiguousarray(y), "st_next": np.ascontiguousarray(following)})
    return out


def test_a_state_pair_both_ends_traced_is_presented_with_its_initial_value():
    before, after = _stream("conv"), _stream("conv")
    assert source_layouts(before) == ({"x": "nhwc", "st": "nhwc"},
                                      {"y": "nhwc", "st_next": "nhwc"})
    result = layout_pass(after, "nchw", io="nchw")
    assert after.inputs["st"].shape == after.outputs["st_next"].shape == (1, 3, 2, 2)
    [var] = after.state
    assert var.initial.shape == (1, 3, 2, 2)
    np.testing.assert_array_equal(var.initial.numpy(), INITIAL.transpose(NHWC_TO_NCHW))
    assert result.counts["inputs_presented"] == 2 and result.counts["outputs_presented"] == 2
    assert count_transposes(after)["total"] == 0  # every op runs in nchw, fed nchw
    assert "transpose" not in types(after)
    frames = [seeded((1, 1, 2, 4), 10 + k) for k in range(3)]
    for got, want in zip(_steps(after, frames, True), _steps(before, frames, False)):
        same_values(got, want)


def test_a_state_pair_with_an_end_of_no_layout_keeps_its_shapes():
    before, after = _stream("flat"), _stream("flat")
    assert source_layouts(before) == ({"st": "nhwc"}, {"y": "nhwc", "st_next": None})
    result = layout_pass(after, "nchw", io="nchw")  # was: an invalid graph
    assert after.inputs["st"].shape == after.outputs["st_next"].shape == (1, 2, 2, 3)
    np.testing.assert_array_equal(after.state[0].initial.numpy(), INITIAL)
    assert "state 'st' -> 'st_next': its input was traced to nhwc and its output to no " \
           "layout, so both keep their shapes" in result.notes
    assert result.counts.get("inputs_presented", 0) == 0
    assert result.counts["outputs_presented"] == 1  # y
    # the concatenation stays nhwc (the frame has no other layout): one transpose, in front
    # of the convolution reading it
    assert count_transposes(after) == {"total": 1, "boundary": 0, "inside": 1}
    [t] = [op for op in after.operations if op.op_type == "transpose"]
    assert t.attr("permutation") == NHWC_TO_NCHW and t.inputs[0].producer.op_type == "concat"
    frames = [seeded((1, 6), 20 + k) for k in range(3)]
    for got, want in zip(_steps(after, frames, False), _steps(before, frames, False)):
        same_values(got, want)


def test_source_layouts_are_traced_through_each_result_of_a_split():
    b = GraphBuilder("split")
    x = b.input("x", "float32", [1, 5, 3, 4])
    left, right = b.split(x, 2, axis=3)
    y = b.add(conv(b, left, 2, 3, "nhwc", seed=1), conv(b, right, 2, 3, "nhwc", seed=2))
    assert source_layouts(b.build({"y": y})) == ({"x": "nhwc"}, {"y": "nhwc"})


ZOO = {m["id"]: m for m in json.loads(
    (Path(__file__).resolve().parents[2] / "models" / "zoo.json").read_text())["models"]}


# presented state pairs, and the transposes left: one in front of the first convolution, whose
# input mixes the rank-3 audio window (no layout to present) with the first state
@pytest.mark.parametrize("model_id,presented", [("alexa", 4), ("hey_jarvis", 4),
                                                ("hey_mycroft", 4), ("okay_nabu", 5)])
def test_wake_words_with_nchw_io_keep_one_transpose_and_match_litert(model_id, presented):
    entry = ZOO[model_id]
    source = fetch_model(entry["source"])
    graph = converter.load(source, input_shapes=entry["inputShapes"])
    sigmoid = next(op for op in graph.operations if op.op_type == "sigmoid")
    logits = sigmoid.inputs[0].producer.inputs[0].name  # the probability is 0 on noise
    graph.set_output(logits, graph.operand(logits))
    initial = {v.input: initial_value(graph, v) for v in graph.state}
    report = convert_for_target(graph, "onnxruntime", io_layout="nchw")
    layout = dict(report.passes)["layout"]
    assert layout.counts["inputs_presented"] == layout.counts["outputs_presented"] == presented
    assert count_transposes(graph) == {"total": 1, "boundary": 0, "inside": 1}
    moved = [v for v in graph.state if graph.inputs[v.input].shape != initial[v.input].shape]
    assert len(moved) == presented
    for var in moved:
        np.testing.assert_array_equal(initial_value(graph, var),
                                      initial[var.input].transpose(NHWC_TO_NCHW))
    steps = converter.verify_steps(source, graph, steps=20, seed=0, tensors=[logits])
    assert steps.source_runtime == "litert" and len(steps.steps) == 20
    assert steps.passed, json.dumps(steps.summary())
    assert steps.summary()[logits]["maxAbs"] == 0  # int8 logits: bit-identical


def test_a_state_of_another_rank_is_left_alone():
    b = GraphBuilder("rank3")
    x = b.input("x", "float32", [1, 3, 4])
    state = b.input("st", "float32", [1, 2, 4])
    window = b.concat([state, x], 1)
    graph = b.build({"y": b.relu(window), "st_next": b.slice(window, [0, 3, 0], [1, 2, 4])})
    graph.declare_state("st", "st_next", initial=seeded((1, 2, 4), 3))
    result = layout_pass(graph, "nchw", io="nchw")
    assert graph.inputs["st"].shape == (1, 2, 4) and graph.state[0].initial.shape == (1, 2, 4)
    assert not [note for note in result.notes if note.startswith("state")]


@pytest.mark.parametrize("kind", ["fill", "int4", "float32"])
def test_an_initial_value_is_transposed_in_its_own_form(kind):
    from converter.ir import ConstantData
    from converter.ir.operand import pack4
    from converter.passes.layout import _transposed

    values = np.arange(-8, 16).reshape(1, 2, 3, 4) % 16 - 8
    if kind == "fill":
        data = ConstantData("float32", (1, 2, 3, 4), fill=2.5, origin="scalar")
        values = np.full((1, 2, 3, 4), 2.5, np.float32)
    elif kind == "int4":
        data = ConstantData("int4", (1, 2, 3, 4), array=pack4(values.astype(np.int8)))
    else:
        data = ConstantData("float32", (1, 2, 3, 4), array=values.astype(np.float32))
    moved = _transposed(data, NHWC_TO_NCHW)
    assert (moved.data_type, moved.shape) == (data.data_type, (1, 4, 2, 3))
    assert (moved.fill, moved.origin) == (data.fill, data.origin)
    np.testing.assert_array_equal(moved.numpy(), values.transpose(NHWC_TO_NCHW))
    assert moved.nbytes == data.nbytes  # int4 stays packed: two values a byte
    if kind == "int4":
        assert moved.held.dtype == np.uint8 and moved.held.size == 12
