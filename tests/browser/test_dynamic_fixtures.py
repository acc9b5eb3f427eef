"""Issue 14 on the exports users make (models/dynamic/): `convert --dim sequence=8,16,32` writes
one module and one weights file no larger than 1.05x a single conversion's, and the module
verifies in Chromium against ONNX Runtime on the export at 8, 16, 24 and 32 (24 never converted);
GPT-2 (dynamo export) with two varying dims at a point never converted; a TFLite model with a
dynamic batch at a batch never converted, against LiteRT."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import converter
from cli.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "dynamic"


def cli(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.fixture(scope="module")
def bert_module(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert_module")
    source = FIXTURES / "bert_legacy.onnx"
    r = cli("convert", source, "-o", folder / "bert.js", "--dim", "sequence=8,16,32",
            "--dim", "batch=1")
    assert r.exit_code == 0, r.output
    assert "one builder for sequence in 8..32" in r.output
    r = cli("convert", source, "-o", folder / "single.js", "--dim", "sequence=32",
            "--dim", "batch=1")
    assert r.exit_code == 0, r.output
    return source, folder


def test_the_module_weighs_one_conversion(bert_module):
    _, folder = bert_module
    size = (folder / "bert.weights").stat().st_size
    assert size <= 1.05 * (folder / "single.weights").stat().st_size
    text = (folder / "bert.js").read_text()
    # batch, fixed at conversion, may be passed (at 1) or left out: buildGraph(c, w, {sequence})
    assert 'export const DIMS = {"sequence": {min: 8, max: 32}};' in text
    assert 'export const FIXED_DIMS = {"batch": 1};' in text


@pytest.mark.parametrize("sequence", [8, 16, 24, 32])
def test_the_bert_export_verifies_in_chromium_at_each_length(browser_limits, bert_module,
                                                             sequence):
    source, folder = bert_module
    r = cli("verify", source, "--graph", folder / "bert.js", "--runtime", "chromium",
            "--dim", f"sequence={sequence}", "--dim", "batch=1", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    (out,) = report["outputs"]
    assert report["passed"] and report["graphRuntime"] == "chromium", out
    assert out["shape"] == [1, sequence, 32] and out["cosine"] >= 0.9999


def test_gpt2_with_two_varying_dims_verifies_at_a_point_never_converted(browser_limits,
                                                                        tmp_path):
    source = FIXTURES / "gpt2_dynamo.onnx"
    variants = converter.convert(source, tmp_path / "gpt2.js",
                                 dims={"sequence": [8, 16, 32], "batch": [1, 2, 4]})
    assert len(variants.entries) == 9
    assert '"batch": {min: 1, max: 4}' in (tmp_path / "gpt2.js").read_text()
    report = converter.verify(source, tmp_path / "gpt2.js", runtime="chromium",
                              dims={"sequence": 24, "batch": 3})
    (out,) = report.outputs
    assert report.passed, out.to_json()
    assert list(out.shape) == [3, 24, 32]


def test_a_tflite_dynamic_batch_verifies_at_a_batch_never_converted(browser_limits, tmp_path):
    source = FIXTURES / "cnn_batch.tflite"
    r = cli("convert", source, "-o", tmp_path / "cnn.js", "--dim", "batch=1,2,4")
    assert r.exit_code == 0 and "one builder for batch in 1..4" in r.output, r.output
    report = converter.verify(source, tmp_path / "cnn.js", runtime="chromium",
                              dims={"batch": 3})
    (out,) = report.outputs
    assert report.passed and report.source_runtime.startswith("litert"), out.to_json()
    assert list(out.shape) == [3, 5]
