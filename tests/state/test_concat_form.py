"""The concat form (state/concat_form.py): the decoder converted once per length, the first
step from the model with its empty past taken out, against ONNX Runtime on the source."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

import converter
from cli.main import main
from converter.errors import ConverterError
from converter.state.generation import generate_on_onnxruntime
from converter.state.concat_form import ConcatLoop, without_past

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "tiny-llama"
PROMPT = [1, 5, 9, 33, 71]


@pytest.mark.parametrize("precision", ["fp32", "int4"])
def test_the_concat_form_decodes_as_onnxruntime_does(precision):
    path = FIXTURES / precision / "model.onnx"
    loop = ConcatLoop(path)
    ours = converter.generate(loop, PROMPT, 6)
    source = generate_on_onnxruntime(path, PROMPT, 6)
    assert ours.tokens == source.tokens
    assert loop.conversions == 6  # the prompt's step, then one a new token fed
    assert loop.last_graph.inputs["past_key_values.0.key"].shape == (1, 2, 9, 16)
    for got, want in zip(ours.logits, source.logits, strict=True):
        assert np.all(np.abs(got - want) <= 1e-4 + 1e-3 * np.abs(want))
    again = converter.generate(loop, PROMPT, 6)  # the graphs are kept: no new conversion
    assert again.tokens == ours.tokens and loop.conversions == 6


def _cache_model(reader: str):
    """present = Concat(past, x) on axis 2, and y = reader(past) (Identity when 'Concat')."""
    past = helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, 2, "p", 4])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 1, 4])
    nodes = [helper.make_node("Concat", ["past", "x"], ["present"], axis=2, name="cat")]
    outputs = [helper.make_tensor_value_info("present", TensorProto.FLOAT, None)]
    if reader != "Concat":
        nodes.append(helper.make_node(reader, ["past"], ["y"], name="reader"))
        outputs.append(helper.make_tensor_value_info("y", TensorProto.INT64, None))
    model = helper.make_model(helper.make_graph(nodes, "cache", [past, x], outputs),
                              opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def test_without_past_drops_the_empty_past_from_concat():
    model = _cache_model("Concat")
    without_past(model, ["past"], "test")
    assert [v.name for v in model.graph.input] == ["x"]
    assert list(model.graph.node[0].input) == ["x"]
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 1, 4)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], x)


def test_without_past_refuses_other_readers():
    model = _cache_model("Shape")
    with pytest.raises(ConverterError, match="read by Shape node 'reader'"):
        without_past(model, ["past"], "test")


def test_verify_and_run_take_the_concat_form(tmp_path):
    source = FIXTURES / "fp32" / "model.onnx"
    r = CliRunner().invoke(main, ["verify", str(source), "--steps", "3", "--prompt", "1,5,9",
                                  "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["graphTokens"] == generate_on_onnxruntime(source, [1, 5, 9], 3).tokens
    assert len(report["positions"]) == 3 + 2
    r = CliRunner().invoke(main, ["run", str(source), "--steps", "2", "--prompt", "1,5",
                                  "--output-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "tokens.npy").tolist() == \
        generate_on_onnxruntime(source, [1, 5], 2).tokens


def test_an_optimum_style_concat_decoder(tmp_path):
    """Concat caches named past_key_values.0.* / present.0.*: found by the default names,
    decoded in the concat form as ONNX Runtime decodes it, and refused a fixed capacity."""
    from .concat_decoder import concat_decoder

    path = tmp_path / "model.onnx"
    concat_decoder(path)
    loop = ConcatLoop(path)
    assert loop.spec.pairs == [("past_key_values.0.key", "present.0.key"),
                               ("past_key_values.0.value", "present.0.value")]
    ours = converter.generate(loop, [1, 5, 9], 8)
    source = generate_on_onnxruntime(path, [1, 5, 9], 8)
    assert ours.tokens == source.tokens and len(set(source.tokens)) >= 3
    for got, want in zip(ours.logits, source.logits, strict=True):
        assert np.all(np.abs(got - want) <= 1e-4 + 1e-3 * np.abs(want))
    with pytest.raises(ConverterError, match="read by Concat, not by GroupQueryAttention"):
        converter.load_decoder(path, capacity=8)
    r = CliRunner().invoke(main, ["convert", str(path), "--cache-capacity", "8", "-o",
                                  str(tmp_path / "out.webnn")])
    assert r.exit_code == 2 and "no fixed-capacity form" in r.output
    assert not (tmp_path / "out.webnn").exists()
