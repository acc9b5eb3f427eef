"""Empty model outputs are left out of the graph, named in a warning, and listed by verify.

optimum's merged decoders (T5, BART, Marian, Whisper) give their with-past branch empty
placeholder outputs for the cross-attention presents ([0, heads, 1, head_dim]); "WebNN has no
empty tensors" stopped their conversion although no caller reads those outputs. The model here
has that shape: an If on `use_cache_branch` (fixed with --const) whose with-past branch outputs
an empty present. ONNX Runtime, running the same model, is the oracle for the other outputs.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from cli.main import main
from converter.errors import UnsupportedError
from converter.importers.dropped_outputs import DroppedOutputWarning, dropped_outputs
from converter.importers.onnx import import_model
from converter.runtimes.execute import run

from .helpers import ort_outputs

F = TensorProto.FLOAT
X = np.arange(12, dtype=np.float32).reshape(1, 3, 4) - 5
PRESENT = "present.0.encoder.key"
EMPTY_SHAPE = [0, 2, 1, 4]


def _merged_decoder() -> onnx.ModelProto:
    """logits = relu(x) with past, -x without; the encoder present is an empty placeholder
    with past, x reshaped to [1, 2, 3, 2] without (as an encoder would compute it)."""
    with_past = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["logits_past"])], "with_past", [],
        [helper.make_tensor_value_info("logits_past", F, None),
         helper.make_tensor_value_info("placeholder", F, None)],
        [numpy_helper.from_array(np.zeros(EMPTY_SHAPE, np.float32), "placeholder")])
    no_past = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["logits_first"]),
         helper.make_node("Reshape", ["x", "shape"], ["computed"])], "no_past", [],
        [helper.make_tensor_value_info("logits_first", F, None),
         helper.make_tensor_value_info("computed", F, None)],
        [numpy_helper.from_array(np.array([1, 2, 3, 2], np.int64), "shape")])
    nodes = [helper.make_node("If", ["use_cache_branch"], ["logits", PRESENT],
                              then_branch=with_past, else_branch=no_past, name="optimum_if")]
    graph = helper.make_graph(
        nodes, "merged", [helper.make_tensor_value_info("x", F, [1, 3, 4]),
                          helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL,
                                                        [1])],
        [helper.make_tensor_value_info("logits", F, None),
         helper.make_tensor_value_info(PRESENT, F, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _import(model, use_cache: bool):
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return import_model(copy, input_shapes={"x": [1, 3, 4]},
                        known_inputs={"use_cache_branch": np.array([use_cache])})


def test_the_with_past_branch_drops_its_empty_present_and_keeps_the_logits():
    model = _merged_decoder()
    want = ort_outputs(model, {"x": X, "use_cache_branch": np.array([True])})
    assert want[1].shape == tuple(EMPTY_SHAPE)  # ONNX Runtime gives the empty placeholder
    with pytest.warns(DroppedOutputWarning, match=rf"output '{PRESENT}' dropped: it is empty "
                                                  rf"\(shape \[0, 2, 1, 4\]\)"):
        graph = _import(model, True)
    assert list(graph.outputs) == ["logits"]
    assert dropped_outputs(graph) == [{"name": PRESENT, "shape": EMPTY_SHAPE}]
    np.testing.assert_array_equal(run(graph, {"x": X})["logits"], want[0])


def test_the_first_step_branch_keeps_its_computed_present():
    model = _merged_decoder()
    want = ort_outputs(model, {"x": X, "use_cache_branch": np.array([False])})
    graph = _import(model, False)  # no warning: nothing is dropped
    assert list(graph.outputs) == ["logits", PRESENT] and dropped_outputs(graph) == []
    got = run(graph, {"x": X})
    np.testing.assert_array_equal(got["logits"], want[0])
    np.testing.assert_array_equal(got[PRESENT], want[1])


def _split_model(outputs) -> onnx.ModelProto:
    """x [2, 3] split into an empty part and the whole; y = relu(whole)."""
    nodes = [helper.make_node("Split", ["x", "sizes"], ["empty", "whole"], axis=1),
             helper.make_node("Relu", ["whole"], ["y"])]
    graph = helper.make_graph(
        nodes, "split", [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info(o, F, None) for o in outputs],
        [numpy_helper.from_array(np.array([0, 3], np.int64), "sizes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def test_an_empty_split_part_output_is_dropped_and_the_rest_matches_onnx_runtime():
    model = _split_model(["empty", "y"])
    xv = X.reshape(2, 6)[:, :3].copy()
    want = ort_outputs(model, {"x": xv})
    with pytest.warns(DroppedOutputWarning, match="output 'empty' dropped"):
        graph = import_model(model, input_shapes={"x": [2, 3]})
    assert list(graph.outputs) == ["y"]
    np.testing.assert_array_equal(run(graph, {"x": xv})["y"], want[1])


def test_a_model_whose_every_output_is_empty_is_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a refusal, not a warning as well
        with pytest.raises(UnsupportedError, match=r"graph output 'empty' is empty \('empty' "
                                                   r"has shape \[2, 0\], with a 0 dimension\); "
                                                   r"WebNN has no empty tensors, and no output "
                                                   r"of the model holds values"):
            import_model(_split_model(["empty"]), input_shapes={"x": [2, 3]})


def test_an_empty_value_an_op_needs_is_still_refused_by_name():
    model = _merged_decoder()
    model.graph.input.append(helper.make_tensor_value_info("scale", F, []))
    model.graph.node.append(helper.make_node("Mul", [PRESENT, "scale"], ["scaled"], name="use"))
    model.graph.output.append(helper.make_tensor_value_info("scaled", F, None))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the refusal alone: no word of dropping the present
        with pytest.raises(UnsupportedError) as info:
            import_model(model, input_shapes={"x": [1, 3, 4], "scale": []},
                         known_inputs={"use_cache_branch": np.array([True])})
    assert "Mul 'use'" in str(info.value) and "no empty tensors" in str(info.value)


def test_the_cli_warns_in_one_line_writes_the_graph_and_verify_lists_the_dropped_output(
        tmp_path):
    src = tmp_path / "decoder_model_merged.onnx"
    src.write_bytes(_merged_decoder().SerializeToString())
    out = tmp_path / "out.webnn"
    result = CliRunner().invoke(main, ["convert", str(src), "-o", str(out),
                                       "--const", "use_cache_branch=1", "--verify", "--json"])
    assert result.exit_code == 0, result.output
    said = [ln for ln in result.stderr.splitlines() if ln.startswith("warning: ")]
    assert said == [f"warning: {src}: output '{PRESENT}' dropped: it is empty (shape "
                        f"[0, 2, 1, 4]) and WebNN has no empty tensors; the converted graph has "
                        f"no such output"]
    report = json.loads(result.stdout)
    assert report["passed"] is True
    assert [o["name"] for o in report["outputs"]] == ["logits"]
    assert report["droppedOutputs"] == [{"name": PRESENT, "shape": EMPTY_SHAPE}]
    from converter.schemas import validate

    validate(report, "verify-report", "verify --json")
    assert out.exists()


def test_a_hostile_output_name_stays_one_warning_line(tmp_path):
    model = _split_model(["empty\n\x1b[31mred", "y"])
    model.graph.node[0].output[0] = "empty\n\x1b[31mred"
    src = tmp_path / "m.onnx"
    src.write_bytes(model.SerializeToString())
    result = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "o.webnn")])
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: ")
    assert "\x1b" not in result.stderr and "empty\\n\\x1b[31mred" in lines[0]
