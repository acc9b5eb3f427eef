"""The committed exports of models/dynamic/ (made by models/make_dynamic_fixtures.py from tiny
random transformers and torch configurations: BERT and Llama by the legacy exporter, GPT-2 by
dynamo, ViT at a fixed and at any image size, a CNN with a symbolic image size, and a TFLite
CNN with a dynamic batch) converted with lists of dims, every variant
checked against ONNX Runtime on the source export at the same dims."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import converter
from converter.conversion.variants import convert_variants
from converter.dynamic.module_js import write_variants_js

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "dynamic"
TEXT = {"sequence": [8, 16, 32], "batch": [1, 2]}


def text_inputs(point, seed=0):
    """Token ids and a mask with padding at the end of the second row: the masked softmax."""
    rng = np.random.default_rng(seed)
    batch, sequence = point["batch"], point["sequence"]
    mask = np.ones((batch, sequence), np.int64)
    mask[batch - 1, sequence - 3:] = 0 if batch > 1 else 1
    return {"input_ids": rng.integers(0, 96, (batch, sequence)).astype(np.int64),
            "attention_mask": mask}


CASES = {
    "bert_legacy": (TEXT, text_inputs),
    "gpt2_dynamo": (TEXT, text_inputs),
    "llama_legacy": (TEXT, text_inputs),
    "vit_legacy": ({"batch": [1, 3]}, None),
    "vit_sized_legacy": ({"batch": [1, 2], "height": [32, 48], "width": 40}, None),
    "cnn_legacy": ({"batch": [1, 2], "height": [16, 40], "width": [24, 32]}, None),
}


def test_the_fixtures_are_small_and_their_dims_symbolic():
    for name, (dims, _) in CASES.items():
        path = FIXTURES / f"{name}.onnx"
        assert path.stat().st_size < 200_000, name
        model = onnx.load(str(path))
        named = {d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim}
        assert {n for n, v in dims.items() if isinstance(v, list)} <= named, (name, named)


@pytest.mark.parametrize("name", CASES)
def test_every_variant_matches_the_source_export_at_its_dims(name):
    dims, make_inputs = CASES[name]
    source = FIXTURES / f"{name}.onnx"
    variants = convert_variants(source, dims)
    assert len(variants.entries) == np.prod([len(v) for v in dims.values() if isinstance(v, list)])
    for point, graph in variants.entries:
        inputs = make_inputs(point) if make_inputs else None
        report = converter.verify(source, graph, dims=point, inputs=inputs)
        (out,) = report.outputs
        assert report.passed, (point, out.to_json())
        first = point.get("batch")
        assert out.shape[0] == first and out.cosine > 0.9999, point


@pytest.mark.parametrize("name", ["bert_legacy", "gpt2_dynamo", "llama_legacy"])
def test_one_file_and_one_module_of_a_text_export_weigh_one_conversion(name, tmp_path):
    source = FIXTURES / f"{name}.onnx"
    variants = convert_variants(source, {"sequence": [8, 16, 32], "batch": 1})
    converter.save(variants, tmp_path / "all.webnn")
    converter.save(converter.load(source, dims={"sequence": 32, "batch": 1}),
                   tmp_path / "one.webnn")
    single = (tmp_path / "one.weights").stat().st_size
    assert (tmp_path / "all.weights").stat().st_size <= 1.05 * single
    back = converter.load(tmp_path / "all.webnn")
    inputs = text_inputs({"batch": 1, "sequence": 16})
    want = converter.run(variants, inputs, dims={"sequence": 16})
    got = converter.run(back, inputs, dims={"sequence": 16})
    np.testing.assert_array_equal(got["last_hidden_state"], want["last_hidden_state"])
    # 24 was never converted: the file's variants build it from their expressions.
    at = {"batch": 1, "sequence": 24}
    report = converter.verify(source, back, dims=at, inputs=text_inputs(at))
    assert report.passed and list(report.outputs[0].shape) == [1, 24, 32]
    # Named apart: all.js's weights (laid out for the module) would change all.webnn's.
    _, note = write_variants_js(variants, tmp_path / "module.js", convert=variants.convert)
    assert (tmp_path / "module.weights").stat().st_size <= 1.05 * single, note


def litert_at(path, image):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    (given,) = interpreter.get_input_details()
    interpreter.resize_tensor_input(given["index"], list(image.shape))
    interpreter.allocate_tensors()
    interpreter.set_tensor(given["index"], image)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_a_tflite_model_with_a_dynamic_batch_converts_at_each_batch(tmp_path):
    source = FIXTURES / "cnn_batch.tflite"
    variants = convert_variants(source, {"batch": [1, 2, 4]})
    converter.save(variants, tmp_path / "cnn.json")
    back = converter.load(tmp_path / "cnn.json")
    rng = np.random.default_rng(5)
    for batch in (1, 2, 4):
        image = rng.standard_normal((batch, 8, 8, 3)).astype(np.float32)
        want = litert_at(source, image)  # LiteRT resized to this batch
        assert want.shape == (batch, 5)
        got = converter.run(back, {"image": image}, dims={"batch": batch})["probs"]
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)
    report = converter.verify(source, variants, dims={"batch": 4})
    assert report.passed and list(report.outputs[0].shape) == [4, 5]


def test_a_tflite_model_names_only_its_batch(tmp_path):
    from converter.testing.tflite_fixtures import Input, Output, one_op

    with pytest.raises(converter.ConverterError, match="no dimension named sequence"):
        converter.load(FIXTURES / "cnn_batch.tflite", dims={"sequence": 8})
    static = tmp_path / "static.tflite"
    static.write_bytes(one_op("RELU", [Input("x", [1, 3])], [Output("y", [1, 3])]))
    with pytest.raises(converter.ConverterError, match="no input of this TFLite model has a "
                                                      "dynamic batch"):
        converter.load(static, dims={"batch": 2})


def test_the_cnn_at_an_image_height_never_converted_in_the_variants_steps():
    source = FIXTURES / "cnn_legacy.onnx"
    variants = convert_variants(source, {"height": [16, 32, 64], "width": 32, "batch": 1})
    graph = variants.at({"height": 24})  # the stride-2 convolution halves it: even heights
    report = converter.verify(source, graph, dims={"height": 24, "width": 32, "batch": 1})
    assert report.passed and list(report.outputs[0].shape) == [1, 10]
    assert graph.inputs["image"].shape == (1, 3, 24, 32)
    with pytest.raises(converter.ConverterError, match="height in 16..64 in steps of 2"):
        variants.at({"height": 25})
