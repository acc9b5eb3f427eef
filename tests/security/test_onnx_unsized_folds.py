"""Nodes folded at conversion time whose result size nothing tells beforehand: neither a bound
from their input shapes nor ONNX's shape inference (a data-dependent op, or inputs whose type
inference rejects while ONNX's reference evaluator takes them). They are computed in a forked
child capped at what the memory budget has left (converter/importers/onnx/capped_fold.py); past
the cap the node's rule keeps it a graph op, or the conversion stops with one line naming the
flag. Was: folded with no bound at all (a 175-byte RoiAlign took 65 s and 2.1 GB, then was
refused).
"""
from __future__ import annotations

import os
import signal

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import converter
from converter.errors import ConverterError, UnsupportedError
from converter.importers.onnx import capped_fold, folding

from .bounded import address_space_bounded  # noqa: F401  (the fixture, used by every test)
from .onnx_cases import convert_refused, model, vi, write

pytestmark = [pytest.mark.usefixtures("address_space_bounded"),
              pytest.mark.skipif(not capped_fold.can_cap(), reason="the cap needs Linux")]

BIG = 2 ** 15  # a 2**15 x 2**15 float32 result: 4 GiB


def _const(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _no_child_left() -> bool:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return pid == 0


@pytest.fixture
def capped(monkeypatch) -> list:
    """Record each fold computed in a capped child."""
    calls = []
    real = folding.fold_capped

    def record(compute, budget, what, where):
        calls.append(what)
        return real(compute, budget, what, where)

    monkeypatch.setattr(folding, "fold_capped", record)
    return calls


def _roi_align(size):
    # RoiAlign has no rule. Its X is rank 5, which ONNX's inference refuses (so it gives no
    # shape) and the reference evaluator takes: the output is size x size per region.
    return ([helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=size,
                              output_width=size)],
            [], [vi("y")], [_const("x", np.ones((1, 1, 2, 2, 1)), np.float32),
                            _const("r", [[0, 0, 1, 1]], np.float32), _const("b", [0])])


def test_a_fold_of_unknown_size_without_a_rule_stops_at_the_budget(tmp_path, capped):
    src = write(model(*_roi_align(BIG), opset=16), tmp_path)
    line = convert_refused(src, tmp_path / "out")
    assert ("computing RoiAlign 'RoiAlign_0' at conversion time needed more than the 256.0 MiB "
            "left of the conversion's limit of 256.0 MiB (0 bytes used); its size depends on "
            "the model's values; if the model is trusted, allow more with --max-total-bytes "
            "(above 256MiB; Python: max_total_bytes=)") in line
    assert capped == ["computing RoiAlign 'RoiAlign_0' at conversion time"]
    assert _no_child_left()


@pytest.mark.parametrize("limit, fits", [(256 * 256 * 4, True), (256 * 256 * 4 - 1, False)])
def test_what_the_child_sends_back_is_claimed_before_it_is_read(tmp_path, limit, fits):
    # 256 KiB: more than a pipe holds, so a refused child is still writing when it is ended.
    src = write(model(*_roi_align(256), opset=16), tmp_path)
    if not fits:
        with pytest.raises(ConverterError, match="computing RoiAlign 'RoiAlign_0' at "
                                                 "conversion time would allocate 256.0 KiB, "
                                                 "taking the conversion past its limit of "
                                                 "256.0 KiB"):
            converter.load(src, max_total_bytes=limit)
        assert _no_child_left()
        return
    y = converter.run(converter.load(src, max_total_bytes=limit), {})["y"]
    assert y.shape == (1, 1, 256, 256)
    np.testing.assert_array_equal(y, 1.0)  # averaged bilinear samples of an all-ones X


def _int32_sized(op):
    """Nodes whose size input is int32 (ONNX wants int64): inference gives up on them, the
    reference evaluator does not; each asks for BIG x BIG float32 values."""
    x = _const("x", [1.0], np.float32)
    if op == "Expand":
        return helper.make_node("Expand", ["x", "s"], ["y"]), [x, _const("s", [BIG, BIG],
                                                                          np.int32)]
    if op == "ConstantOfShape":
        return helper.make_node("ConstantOfShape", ["s"], ["y"]), [_const("s", [BIG, BIG],
                                                                          np.int32)]
    if op == "Tile":
        return helper.make_node("Tile", ["x", "s"], ["y"]), [x, _const("s", [BIG * BIG],
                                                                        np.int32)]
    return helper.make_node("Pad", ["x", "p"], ["y"]), [x, _const("p", [0, BIG * BIG],
                                                                   np.int32)]


@pytest.mark.parametrize("op, kept_as", [("Expand", "expand"), ("ConstantOfShape", "expand"),
                                         ("Tile", "tile"), ("Pad", "pad")])
def test_a_fold_of_unknown_size_past_the_cap_stays_a_graph_op(tmp_path, capped, op, kept_as):
    # Was: each folded with no bound (Expand: 5.6 s, 2.1 GB, then refused).
    node, inits = _int32_sized(op)
    graph = converter.load(write(model([node], [], [vi("y")], inits, opset=13), tmp_path))
    assert capped == [f"computing {op} '{op}_0' at conversion time"]
    assert [o.op_type for o in graph.operations] == [kept_as]
    assert graph.outputs["y"].shape == ((BIG, BIG) if op != "Tile" and op != "Pad"
                                        else (BIG * BIG + (op == "Pad"),))
    assert _no_child_left()


def test_max_unpool_to_a_huge_output_shape_stays_a_graph_op(tmp_path, capped):
    inits = [_const("x", np.ones((1, 1, 2, 2)), np.float32), _const("i", np.zeros((1, 1, 2, 2))),
             _const("s", [1, 1, BIG, BIG])]
    graph = converter.load(write(model([helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"],
                                                         kernel_shape=[2, 2])],
                                       [], [vi("y")], inits, opset=11), tmp_path))
    assert capped == ["computing MaxUnpool 'MaxUnpool_0' at conversion time"]
    assert "pad" in [o.op_type for o in graph.operations]
    assert graph.outputs["y"].shape == (1, 1, BIG, BIG)


def _onnx_runtime(m: onnx.ModelProto) -> list[np.ndarray]:
    return ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {})


def test_a_small_fold_of_unknown_size_with_a_rule_is_folded_as_onnx_runtime_computes(
        tmp_path, capped):
    x = np.array([[[[5, 6], [7, 8]]]], np.float32)
    i = np.array([[[[5, 7], [13, 15]]]], np.int64)
    m = model([helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2],
                                strides=[2, 2])],
              [], [vi("y")], [_const("x", x, np.float32), _const("i", i), _const("s", [1, 1, 4, 4])],
              opset=11)
    graph = converter.load(write(m, tmp_path))
    assert capped == ["computing MaxUnpool 'MaxUnpool_0' at conversion time"]
    assert [o.op_type for o in graph.operations] == ["identity"]  # folded: a constant output
    y = converter.run(graph, {})["y"]
    np.testing.assert_array_equal(y, _onnx_runtime(m)[0])
    np.testing.assert_array_equal(y.reshape(-1)[[5, 7, 13, 15]], [5, 6, 7, 8])


def test_a_small_fold_of_unknown_size_without_a_rule_is_folded_as_onnx_runtime_computes(
        tmp_path, capped):
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [0, 10, 1, 11]]],
                     np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.95]]], np.float32)
    m = model([helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou"], ["y"])], [],
              [vi("y", T.INT64)], [_const("b", boxes, np.float32), _const("s", scores, np.float32),
                                   _const("m", [3]), _const("iou", [0.5], np.float32)], opset=11)
    graph = converter.load(write(m, tmp_path))
    assert capped == ["computing NonMaxSuppression 'NonMaxSuppression_0' at conversion time"]
    y = converter.run(graph, {})["y"]
    np.testing.assert_array_equal(y, _onnx_runtime(m)[0])
    # by score: box 3 (0.95), box 0 (0.9); box 1 overlaps box 0 by 0.82 and is dropped
    np.testing.assert_array_equal(y, [[0, 0, 3], [0, 0, 0], [0, 0, 2]])


def test_strings_come_back_from_the_child_exactly(tmp_path, capped):
    # StringSplit's result count is data-dependent. A NUL ends "x\0": numpy's fixed-width
    # strings would drop it, and RegexFullMatch would then match "x".
    words = helper.make_tensor("w", T.STRING, [2], ["ab cé d".encode(), "x\x00 yy".encode()])
    m = model([helper.make_node("Constant", [], ["t"], value=words),
               helper.make_node("StringSplit", ["t"], ["s", "n"], delimiter=" "),
               helper.make_node("RegexFullMatch", ["s"], ["b"], pattern="[a-zé]+"),
               helper.make_node("Cast", ["b"], ["f"], to=T.FLOAT)],
              [], [vi("f"), vi("n", T.INT64)], opset=20)
    graph = converter.load(write(m, tmp_path))
    assert "computing StringSplit 'StringSplit_1' at conversion time" in capped
    result = converter.run(graph, {})
    want = _onnx_runtime(m)
    np.testing.assert_array_equal(result["f"], want[0])
    np.testing.assert_array_equal(result["n"], want[1])
    np.testing.assert_array_equal(result["f"], [[1, 1, 1], [0, 1, 0]])


def _die(*args):
    os.kill(os.getpid(), signal.SIGSEGV)


def test_a_crash_of_the_child_is_one_line_about_its_node(tmp_path, monkeypatch, capped):
    monkeypatch.setattr(folding, "_evaluate", _die)
    with pytest.raises(UnsupportedError, match="RoiAlign 'RoiAlign_0': computing it at "
                                               "conversion time failed: the process computing "
                                               "it died of SIGSEGV"):
        converter.load(write(model(*_roi_align(4), opset=16), tmp_path))
    assert _no_child_left()


class _Stop(KeyboardInterrupt):
    pass


def _stop_the_parent_and_wait(*args):
    os.kill(os.getppid(), signal.SIGTERM)  # the parent is waiting for this child's result
    while True:
        signal.pause()


def test_a_stop_while_the_child_computes_ends_the_child(tmp_path, monkeypatch):
    def stop(signum, frame):
        raise _Stop(signum)

    monkeypatch.setattr(folding, "_evaluate", _stop_the_parent_and_wait)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(_Stop):
            converter.load(write(model(*_roi_align(4), opset=16), tmp_path))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert _no_child_left()  # killed and reaped, not left paused


@pytest.mark.parametrize("has_rule", [True, False])
def test_without_a_cap_such_a_node_is_not_folded(tmp_path, monkeypatch, capped, has_rule):
    monkeypatch.setattr(folding, "can_cap", lambda: False)
    if has_rule:
        node, inits = _int32_sized("Expand")
        graph = converter.load(write(model([node], [], [vi("y")], inits, opset=13), tmp_path))
        assert [o.op_type for o in graph.operations] == ["expand"]
    else:
        with pytest.raises(ConverterError, match="computing RoiAlign 'RoiAlign_0' at conversion "
                                                 "time: its size depends on the model's values, "
                                                 "and only on Linux"):
            converter.load(write(model(*_roi_align(4), opset=16), tmp_path))
    assert capped == []


def test_a_negative_inferred_dimension_tells_no_size():
    # STFT's frame count is negative when a frame is longer than the signal; one negative
    # dimension made the bound negative, which fits any budget.
    node = helper.make_node("STFT", ["x", "st", "", "fl"], ["y"])
    inits = [_const("x", np.ones((1, 16, 1)), np.float32), _const("st", 1), _const("fl", 20)]
    m = helper.make_model(helper.make_graph(
        [node], "g", [vi(t.name, t.data_type, list(t.dims)) for t in inits],
        [helper.make_empty_tensor_value_info("y")], initializer=inits),
        opset_imports=[helper.make_opsetid("", 17)])
    inferred = onnx.shape_inference.infer_shapes(m, data_prop=True)
    assert [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim][1] < 0
    assert folding._output_shapes(m) is None


def test_running_out_of_memory_folding_here_is_one_line_about_its_node(tmp_path, monkeypatch):
    def out_of_memory(*args):
        raise MemoryError("Unable to allocate 4.00 GiB")

    monkeypatch.setattr(folding, "_evaluate", out_of_memory)
    inits = [_const("a", [1.0, 2.0], np.float32), _const("b", [3.0, 4.0], np.float32)]
    with pytest.raises(UnsupportedError, match="Add 'Add_0': computing it at conversion time "
                                               "failed: MemoryError: Unable to allocate"):
        converter.load(write(model([helper.make_node("Add", ["a", "b"], ["y"])], [],
                                   [vi("y")], inits), tmp_path))


def test_any_other_failure_in_the_child_is_one_line_about_its_node(tmp_path, monkeypatch):
    def fails(*args):
        raise ValueError("odd input\nsecond line")

    monkeypatch.setattr(folding, "_evaluate", fails)
    with pytest.raises(UnsupportedError) as e:
        converter.load(write(model(*_roi_align(4), opset=16), tmp_path))
    assert ("RoiAlign 'RoiAlign_0': computing it at conversion time failed: ValueError: odd "
            "input;") in str(e.value)
    assert _no_child_left()


def test_a_size_inference_gives_is_folded_here_even_when_it_is_zero(tmp_path, capped):
    # Pad has no quick bound; inference gives its result [0], a size, not "unknown".
    m = model([helper.make_node("Pad", ["a", "p"], ["e"]),
               helper.make_node("Concat", ["e", "x"], ["y"], axis=0)],
              [vi("x", shape=[2])], [vi("y", shape=[2])],
              [_const("a", np.zeros(0), np.float32), _const("p", [0, 0])], opset=13)
    graph = converter.load(write(m, tmp_path))
    assert capped == []
    x = np.array([3.0, 4.0], np.float32)
    np.testing.assert_array_equal(converter.run(graph, {"x": x})["y"], x)


@pytest.fixture
def forked(monkeypatch) -> list:
    """The pids of the processes forked meanwhile (inference's and the capped folds')."""
    pids = []
    real = os.fork

    def fork():
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def _all_reaped(pids) -> bool:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False  # still running, or exited and never waited for
    return True


@pytest.mark.parametrize("limit", [256 * 256 * 4, 256 * 256 * 4 - 1])
def test_every_child_is_reaped_whether_its_results_are_taken_or_refused(tmp_path, forked,
                                                                         limit):
    src = write(model(*_roi_align(256), opset=16), tmp_path)
    try:
        converter.load(src, max_total_bytes=limit)
    except ConverterError:
        assert limit < 256 * 256 * 4
    # the whole-model inference, the fold's size inference, the capped fold
    assert len(forked) == 3 and _all_reaped(forked)


def test_what_the_budget_has_left():
    from converter.budget import MemoryBudget

    budget = MemoryBudget(max_total_bytes=100)
    budget.claim(30, "a")
    assert budget.left() == 70
    budget.claim(70, "b")
    assert budget.left() == 0


def test_no_cap_without_proc(monkeypatch):
    monkeypatch.setattr(capped_fold, "_data_bytes", lambda: None)
    assert not capped_fold.can_cap()


@pytest.mark.parametrize("entry, message", [
    ([1, [2, -1], 8], r"a result of shape \[2, -1\]"),
    ([1, [2], -1], r"a result of shape \[2\]"),
])
def test_a_result_announced_with_a_negative_size_is_refused(entry, message):
    with pytest.raises(folding.Unsupported, match=message):
        capped_fold._spec(entry)


def test_a_result_of_nothing_is_announced_as_such():
    assert capped_fold._spec([1, [0, 3], 0]) == (1, (0, 3), 0)


def test_results_whose_bytes_do_not_add_up_are_refused():
    import io

    with pytest.raises(folding.Unsupported, match="sent 12 bytes for a float32 result of "
                                                  r"shape \[2\]"):
        capped_fold._receive(io.BytesIO(bytes(12)), T.FLOAT, (2,), 12)
    with pytest.raises(folding.Unsupported, match="ended before sending its result"):
        capped_fold._receive(io.BytesIO(bytes(4)), T.FLOAT, (2,), 8)
    one = np.array([1], np.int64).tobytes()
    with pytest.raises(folding.Unsupported, match="strings of the wrong length"):
        capped_fold._receive(io.BytesIO(one + b"ab"), T.STRING, (1,), 8 + 2)
    minus = np.array([-1], np.int64).tobytes()
    with pytest.raises(folding.Unsupported, match="strings of the wrong length"):
        capped_fold._receive(io.BytesIO(minus), T.STRING, (1,), 8 - 1)
    both = np.array([1, 2], np.int64).tobytes()
    got = capped_fold._receive(io.BytesIO(both + "aé".encode()), T.STRING, (2,), 16 + 3)
    assert got.dtype == object and got.tolist() == ["a", "é"]


def test_a_fold_of_known_size_that_onnx_rejects_is_one_line_about_its_node(tmp_path, capped):
    inits = [_const("a", np.arange(6), np.float32), _const("s", [4])]
    with pytest.raises(UnsupportedError, match="Reshape 'Reshape_0': computing it at "
                                               "conversion time failed: ValueError: cannot "
                                               "reshape array of size 6 into shape"):
        converter.load(write(model([helper.make_node("Reshape", ["a", "s"], ["y"])], [],
                                   [vi("y")], inits), tmp_path))
    assert capped == []  # its size bound came from its input: computed here


def test_a_child_that_ends_badly_after_sending_its_results_is_not_believed(
        tmp_path, monkeypatch):
    real_exit = os._exit
    monkeypatch.setattr(os, "_exit", lambda status: real_exit(3))  # the forked child's exit
    with pytest.raises(UnsupportedError, match="RoiAlign 'RoiAlign_0': computing it at "
                                               "conversion time failed: the process computing "
                                               "it exited with status 3"):
        converter.load(write(model(*_roi_align(4), opset=16), tmp_path))
    assert _no_child_left()


def test_inference_of_a_zero_size_result_is_a_size():
    inits = [_const("a", np.zeros(0), np.float32), _const("p", [0, 0])]
    m = helper.make_model(helper.make_graph(
        [helper.make_node("Pad", ["a", "p"], ["e"])], "g",
        [vi(t.name, t.data_type, list(t.dims)) for t in inits],
        [helper.make_empty_tensor_value_info("e")], initializer=inits),
        opset_imports=[helper.make_opsetid("", 13)])
    assert folding._output_shapes(m) == [([0], T.FLOAT)]
