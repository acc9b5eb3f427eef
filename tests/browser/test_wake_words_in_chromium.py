"""The four int8 wake-word TFLite models (TFLite resource variables imported as graph state)
stepped 20 times in Chromium's WebNN through the emitted module's createSession, the state kept
on the browser's context, against LiteRT's Interpreter keeping its own variables: every step's
probability, logits and every variable's assigned value compared.

They run after `--target chromium-litert`, whose int8_in_float pass concatenates int8 state in
float32 (Chromium 153's LiteRT refuses to build an int8 concat of a graph input: "Failed to
allocate tensors"); everything else stays int8 as in the source."""
import json
from pathlib import Path

import numpy as np
import pytest

import converter
from converter.zoo.fetch import fetch_model
from converter.targets import load_target
from converter.targets.pipeline import convert_for_target

ZOO = {m["id"]: m for m in json.loads(
    (Path(__file__).resolve().parents[2] / "models" / "zoo.json").read_text())["models"]}
WAKE_WORDS = ("alexa", "hey_jarvis", "hey_mycroft", "okay_nabu")


@pytest.mark.parametrize("model_id", WAKE_WORDS)
def test_wake_word_model_verifies_over_20_steps_in_chromium(model_id, browser_limits):
    entry = ZOO[model_id]
    source = fetch_model(entry["source"])
    graph = converter.load(source, input_shapes=entry["inputShapes"])
    assert len(graph.state) == 6
    # The probability is 0 on random input: the logits before the sigmoid are compared too.
    sigmoid = next(op for op in graph.operations if op.op_type == "sigmoid")
    logits = sigmoid.inputs[0].producer.inputs[0].name
    # each variable's assigned value, by its TFLite tensor name (what LiteRT reports)
    states = [graph.outputs[v.output].name for v in graph.state]
    int8_concats = sum(op.op_type == "concat" and op.output.data_type == "int8"
                       for op in graph.operations)
    assert int8_concats >= 6  # one per variable at least (okay_nabu has three more)
    for name in [*states, logits]:
        graph.set_output(name, graph.operand(name))
    report = convert_for_target(graph, load_target("chromium-litert"))
    assert dict(report.passes)["int8_in_float"].counts["int8_ops_in_float"] == int8_concats
    report = converter.verify_steps(source, graph, steps=20, seed=0, runtime="chromium",
                                    tensors=states + [logits])
    assert report.graph_runtime == "chromium" and report.source_runtime == "litert"
    assert len(report.steps) == 20 and all(len(step) == 8 for step in report.steps)
    assert report.passed, json.dumps(report.summary())
    summary = report.summary()
    assert all(s["elements"] > 0 for s in summary.values())
    # int8 values pass within one quantization step; here they are bit-identical
    assert all(s["differing"] == 0 and s["maxAbs"] == 0.0 for s in summary.values()), summary
    assert set(summary) == {*states, logits, *(n for n in graph.outputs if n not in states
                                              and n != logits and "states" not in n)}


def test_without_the_pass_chromium_refuses_the_int8_concat_of_state(browser_limits):
    """Why the pass is there: the same graph without the chromium-litert passes fails to build at
    the first concat of a variable (the day Chromium accepts it, this test says so)."""
    entry = ZOO["alexa"]
    graph = converter.load(fetch_model(entry["source"]), input_shapes=entry["inputShapes"])
    state_inputs = {v.input for v in graph.state}
    reading_state = {op.name for op in graph.operations if op.op_type == "concat"
                     and any(i.name in state_inputs for i in op.inputs)}
    with pytest.raises(converter.ConverterError, match="Failed to allocate tensors") as caught:
        converter.Session(graph, runtime="chromium").close()
    op_type, name = caught.value.where.split(" ", 1)
    assert op_type == "concat" and name.strip("'") in reading_state
