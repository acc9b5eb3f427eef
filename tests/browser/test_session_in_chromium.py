"""The emitted module's `createSession(context, weights)` in Chromium's WebNN: a hand-made
stateful graph (a running sum and a ring buffer of the last three inputs) stepped 12 times, each
step's outputs and the state the browser holds checked against the same recurrence in numpy."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import converter
from converter.emit.javascript import module_source

STEPS = 12


def _ring_model(path):
    """sum' = sum + x; ring' = ring[1:] ++ x; mean = (sum of ring') / 3; y = sum' * x."""
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Add", ["acc", "x"], ["acc_next"]),
        helper.make_node("Slice", ["ring", "one", "big", "axis0"], ["older"]),
        helper.make_node("Concat", ["older", "x"], ["ring_next"], axis=0),
        helper.make_node("ReduceMean", ["ring_next", "axis0"], ["mean"], keepdims=0),
        helper.make_node("Mul", ["acc_next", "x"], ["y"]),
    ]
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [1], [v])  # noqa: E731
    graph = helper.make_graph(
        nodes, "ring_and_sum",
        [helper.make_tensor_value_info("x", f, [1, 4]),
         helper.make_tensor_value_info("acc", f, [1, 4]),
         helper.make_tensor_value_info("ring", f, [3, 4])],
        [helper.make_tensor_value_info("y", f, [1, 4]),
         helper.make_tensor_value_info("mean", f, [4]),
         helper.make_tensor_value_info("acc_next", f, [1, 4]),
         helper.make_tensor_value_info("ring_next", f, [3, 4])],
        [ints("one", 1), ints("big", 3), ints("axis0", 0)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


@pytest.fixture
def ring_graph(tmp_path):
    _ring_model(tmp_path / "ring.onnx")
    graph = converter.load(tmp_path / "ring.onnx")
    graph.declare_state("acc", "acc_next", initial=np.full((1, 4), 0.5, np.float32))
    graph.declare_state("ring", "ring_next")  # zeros
    return graph


def _numpy_steps(xs):
    acc, ring = np.full((1, 4), 0.5, np.float32), np.zeros((3, 4), np.float32)
    for x in xs:
        acc = acc + x
        ring = np.concatenate([ring[1:], x])
        yield {"y": acc * x, "mean": ring.mean(axis=0)}, {"acc": acc, "ring": ring}


def test_the_module_exports_state_and_create_session(ring_graph):
    source, weights = module_source(ring_graph)
    assert ('export const state = [\n  {input: "acc", output: "acc_next", initial: "acc/initial"},'
            '\n  {input: "ring", output: "ring_next", initial: null}\n];') in source
    assert "export async function createSession(context, weights)" in source
    assert [key for key, _ in weights] == ["acc/initial"]
    np.testing.assert_array_equal(weights[0][1].numpy(), np.full((1, 4), 0.5, np.float32))


def test_a_session_in_chromium_carries_state_like_numpy(browser_limits, ring_graph):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(STEPS)]
    with converter.Session(ring_graph, runtime="chromium") as session:
        assert session.feed_names == ["x"] and session.output_names == ["y", "mean"]
        for k, (x, (want, state)) in enumerate(zip(xs, _numpy_steps(xs))):
            got = session.step({"x": x})
            assert sorted(got) == ["mean", "y"], k
            np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6, atol=1e-6, err_msg=k)
            np.testing.assert_allclose(got["mean"], want["mean"], rtol=1e-6, atol=1e-6,
                                       err_msg=k)
            held = session.read_state()
            np.testing.assert_allclose(held["acc"], state["acc"], rtol=1e-6, err_msg=k)
            np.testing.assert_array_equal(held["ring"], state["ring"], err_msg=k)
        # reset(): the first step again gives the first step's outputs
        session.reset()
        first, _ = next(_numpy_steps(xs))
        np.testing.assert_allclose(session.step({"x": xs[0]})["y"], first["y"], rtol=1e-6)


def test_a_chromium_session_agrees_with_the_ort_session(browser_limits, ring_graph):
    rng = np.random.default_rng(5)
    ort = converter.Session(ring_graph)
    with converter.Session(ring_graph, runtime="chromium") as browser:
        for _ in range(6):
            x = rng.standard_normal((1, 4)).astype(np.float32)
            want, got = ort.step({"x": x}), browser.step({"x": x})
            for name in ("y", "mean"):
                np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)


def test_a_chromium_session_refuses_a_state_feed(browser_limits, ring_graph):
    with converter.Session(ring_graph, runtime="chromium") as session:
        with pytest.raises(converter.ConverterError, match="'acc' is state"):
            session.step({"x": np.zeros((1, 4), np.float32), "acc": np.zeros((1, 4), np.float32)})
