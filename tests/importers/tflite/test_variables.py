"""Resource variables become graph state (rules/variables.py): each variable a state pair whose
initial value CALL_ONCE's init subgraph gives, checked step by step against LiteRT's
Interpreter kept across invocations (it keeps its own variables), and against numpy."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from converter.errors import ConverterError
from converter.zoo.fetch import fetch_model
from converter.formats import load_graph, save_graph
from converter.importers.tflite import import_tflite
from converter.runtimes.litert import LiteRTSession
from converter.runtimes.session import Session
from converter.testing.tflite_fixtures import TfliteBuilder
from converter.verification.steps import verify_steps

from .helpers import rand, refused

ROOT = Path(__file__).resolve().parents[3]
ZOO = {m["id"]: m for m in json.loads((ROOT / "models" / "zoo.json").read_text())["models"]}
WAKE_WORDS = ("alexa", "hey_jarvis", "hey_mycroft", "okay_nabu")


def _accumulator(start: np.ndarray, *, init_ops=None) -> bytes:
    """out = (start + x_0 + ... + x_k) * x_k at step k: a variable read, assigned, and read
    again after the assignment (which sees the new value, as in LiteRT)."""
    b = TfliteBuilder()
    x = b.input("x", [1, 4])
    h, v, s, v2, out = (b.tensor("acc", [], "resource"), b.tensor("v", [1, 4]),
                        b.tensor("s", [1, 4]), b.tensor("v2", [1, 4]), b.tensor("out", [1, 4]))
    b.op("CALL_ONCE", [], [], initSubgraphIndex=1)
    b.op("VAR_HANDLE", [], [h], sharedName="acc")
    b.op("READ_VARIABLE", [h], [v])
    b.op("ADD", [x, v], [s])
    b.op("ASSIGN_VARIABLE", [h, s], [])
    b.op("READ_VARIABLE", [h], [v2])
    b.op("MUL", [v2, x], [out])
    b.add_subgraph("init")
    hi = b.tensor("acc_init", [], "resource")
    b.op("VAR_HANDLE", [], [hi], sharedName="acc")
    if init_ops is None:
        b.op("ASSIGN_VARIABLE", [hi, b.constant("start", start)], [])
    else:
        init_ops(b, hi)
    return b.build([out])


def test_a_variable_becomes_a_state_pair_with_the_init_subgraphs_value():
    start = rand(1, 4)
    graph = import_tflite(_accumulator(start))
    assert list(graph.inputs) == ["x", "acc"] and list(graph.outputs) == ["out", "acc/next"]
    [var] = graph.state
    assert (var.input, var.output) == ("acc", "acc/next")
    np.testing.assert_array_equal(var.initial.numpy(), start)
    assert graph.outputs["acc/next"].producer.op_type == "add"


def test_session_steps_match_numpy_and_litert():
    start = rand(1, 4)
    model = _accumulator(start)
    graph = import_tflite(model)
    session, litert = Session(graph), LiteRTSession(model)
    total = start.astype(np.float64)
    xs = [rand(1, 4) for _ in range(20)]
    for k, x in enumerate(xs):
        total = total + x
        ours = session.step({"x": x})["out"]
        np.testing.assert_allclose(ours, total * x, rtol=1e-5, atol=1e-6, err_msg=f"step {k}")
        np.testing.assert_array_equal(ours, litert.run({"x": x})["out"])
    assert session.steps == 20
    np.testing.assert_allclose(session.state["acc"], total, rtol=1e-5)
    session.reset()  # back to the initial value: the first step again
    np.testing.assert_allclose(session.step({"x": xs[0]})["out"], (start + xs[0]) * xs[0],
                               rtol=1e-6)


def test_verify_steps_compares_every_step_and_catches_a_lost_state(tmp_path):
    model = _accumulator(rand(1, 4))
    path = tmp_path / "acc.tflite"
    path.write_bytes(model)
    report = verify_steps(path, steps=20, seed=3)
    assert report.passed and len(report.steps) == 20
    assert report.summary()["out"]["mismatched"] == 0
    assert report.to_json()["stepCount"] == 20 and report.state == ["acc <- acc/next"]
    # A graph that forgets its state (next state = the initial value) matches step 0 only.
    graph = import_tflite(model)
    keep = graph.add_operation("identity", [graph.inputs["acc"]]).outputs[0]
    graph.set_output("acc/next", keep)
    broken = verify_steps(path, graph, steps=5, seed=3)
    assert [step[0].passed for step in broken.steps] == [True, False, False, False, False]
    assert broken.summary()["out"]["firstFailingStep"] == 1


def test_an_init_subgraph_computing_from_constants_is_evaluated():
    a, c = rand(1, 4), rand(1, 4)

    def init(b, handle):
        total = b.tensor("total", [1, 4])
        b.op("ADD", [b.constant("a", a), b.constant("c", c)], [total])
        b.op("ASSIGN_VARIABLE", [handle, total], [])

    model = _accumulator(None, init_ops=init)
    graph = import_tflite(model)
    np.testing.assert_array_equal(graph.state[0].initial.numpy(), a + c)
    x = rand(1, 4)
    np.testing.assert_array_equal(Session(graph).step({"x": x})["out"],
                                  LiteRTSession(model).run({"x": x})["out"])


def test_a_variable_only_read_keeps_its_value():
    b = TfliteBuilder()
    x = b.input("x", [2])
    h, v, out = b.tensor("bias", [], "resource"), b.tensor("v", [2]), b.tensor("out", [2])
    b.op("CALL_ONCE", [], [], initSubgraphIndex=1)
    b.op("VAR_HANDLE", [], [h], sharedName="bias")
    b.op("READ_VARIABLE", [h], [v])
    b.op("ADD", [x, v], [out])
    b.add_subgraph("init")
    hi = b.tensor("bias_init", [], "resource")
    b.op("VAR_HANDLE", [], [hi], sharedName="bias")
    b.op("ASSIGN_VARIABLE", [hi, b.constant("b", np.array([1.5, -2.0], np.float32))], [])
    model = b.build([out])
    graph = import_tflite(model)
    assert graph.outputs["bias/next"].producer.op_type == "identity"
    session, litert = Session(graph), LiteRTSession(model)
    for _ in range(3):
        x_value = rand(2)
        np.testing.assert_array_equal(session.step({"x": x_value})["out"],
                                      litert.run({"x": x_value})["out"])
        np.testing.assert_array_equal(session.state["bias"], [1.5, -2.0])


def test_a_variable_read_before_any_assignment_is_refused():
    b = TfliteBuilder()
    x = b.input("x", [2])
    h, v, out = b.tensor("h", [], "resource"), b.tensor("v", [2]), b.tensor("out", [2])
    b.op("VAR_HANDLE", [], [h], sharedName="never_set")
    b.op("READ_VARIABLE", [h], [v])
    b.op("ADD", [x, v], [out])
    error = refused(b.build([out]))
    assert error.items == ["READ_VARIABLE (op 1 -> 'v'): variable 'never_set' is read before "
                           "any value is assigned to it (no CALL_ONCE initializes it)"]


def test_an_init_subgraph_with_an_unsupported_op_is_refused_by_name():
    def init(b, handle):
        made = b.tensor("made", [1, 4])
        b.op("CUSTOM:MakeState", [b.constant("seed", rand(1, 4))], [made])
        b.op("ASSIGN_VARIABLE", [handle, made], [])

    error = refused(_accumulator(None, init_ops=init))
    assert len(error.items) == 1
    assert error.items[0].startswith("CALL_ONCE (op 0): its init subgraph 'init' has "
                                     "CUSTOM:MakeState (op 1): a custom op")


def test_a_session_refuses_a_fed_state():
    graph = import_tflite(_accumulator(rand(1, 4)))
    session = Session(graph)
    assert session.feed_names == ["x"] and session.output_names == ["out"]
    with pytest.raises(ConverterError, match="'acc' is state; the session feeds it"):
        session.step({"x": rand(1, 4), "acc": rand(1, 4)})


def _wake_word(model_id: str):
    entry = ZOO[model_id]
    source = fetch_model(entry["source"])
    return source, import_tflite(source, input_shapes=entry["inputShapes"])


@pytest.mark.parametrize("model_id", WAKE_WORDS)
def test_wake_word_model_verifies_over_20_steps_against_litert(model_id):
    source, graph = _wake_word(model_id)
    assert len(graph.state) == 6 and all(v.initial is not None for v in graph.state)
    assert all(graph.inputs[v.input].data_type == "int8" for v in graph.state)
    # The probability is 0 on random input, so the logits before the sigmoid and every
    # variable's assigned value (the state LiteRT keeps) are compared as well, every step.
    sigmoid = next(op for op in graph.operations if op.op_type == "sigmoid")
    logits = sigmoid.inputs[0].producer.inputs[0].name
    states = [graph.outputs[v.output].name for v in graph.state]
    report = verify_steps(source, graph, steps=20, seed=0, tensors=states + [logits])
    assert report.passed, json.dumps(report.summary())
    summary = report.summary()
    assert len(summary) == 8 and all(s["elements"] > 0 for s in summary.values())
    # int8 outputs pass within one quantization step; these are bit-identical
    assert all(s["differing"] == 0 and s["maxAbs"] == 0.0 for s in summary.values())


@pytest.mark.parametrize("model_id", ["alexa", "okay_nabu"])
def test_wake_word_state_matters(model_id):
    """The check above can fail: the state moves from step to step, and a graph restarted
    from the initial values at every step leaves LiteRT's trajectory."""
    source, graph = _wake_word(model_id)
    first = graph.state[0]
    carried, litert = Session(graph), LiteRTSession(source, tensors=[
        graph.outputs[first.output].name])
    name = next(iter(graph.inputs))
    rng = np.random.default_rng(1)
    seen, restarted_differs = [], False
    for _ in range(10):
        x = rng.integers(-128, 128, graph.inputs[name].shape).astype(np.int8)
        carried.step({name: x})
        want = litert.run({name: x})[graph.outputs[first.output].name]
        np.testing.assert_array_equal(carried.state[first.input], want)
        fresh = Session(graph)
        fresh.step({name: x})
        restarted_differs |= not np.array_equal(fresh.state[first.input], want)
        seen.append(want.copy())
    assert restarted_differs
    assert not np.array_equal(seen[0], seen[-1])


def test_wake_word_graph_keeps_its_state_through_a_saved_file(tmp_path):
    source, graph = _wake_word("hey_jarvis")
    save_graph(graph, tmp_path / "jarvis.webnn")
    loaded = load_graph(tmp_path / "jarvis.webnn")
    assert [(v.input, v.output) for v in loaded.state] == \
        [(v.input, v.output) for v in graph.state]
    for a, b in zip(loaded.state, graph.state):
        np.testing.assert_array_equal(a.initial.numpy(), b.initial.numpy())
    name = next(iter(graph.inputs))
    rng = np.random.default_rng(2)
    ours, theirs = Session(graph), Session(loaded)
    for _ in range(5):
        x = rng.integers(-128, 128, graph.inputs[name].shape).astype(np.int8)
        ours.step({name: x})
        theirs.step({name: x})
    for key, value in ours.state.items():
        np.testing.assert_array_equal(theirs.state[key], value)
