"""`check` and `convert --target` on a uint4 MatMulNBits model, with and without --dequantize:
what check says for each quantized weight, and that the converted files verify against ONNX
Runtime (the .tflite export also on LiteRT, its weights int4)."""
from __future__ import annotations

import json

import click
import onnx
from click.testing import CliRunner

from cli.commands import check_graph, convert_model
from tests.passes.quantized_models import decoder_block

GROUP = click.Group(commands=[check_graph.command, convert_model.command])


def run(*args):
    return CliRunner().invoke(GROUP, [str(a) for a in args])


def _model(tmp_path):
    model, _ = decoder_block()
    path = tmp_path / "decoder.onnx"
    onnx.save(model, path)
    return path


def test_check_names_the_pass_and_says_what_it_does_per_weight(tmp_path):
    src = _model(tmp_path)
    r = run("check", src, "--target", "chromium-litert")
    assert r.exit_code == 0, r.output  # the pass re-bases the uint4: it fits after conversion
    assert "no pass converts uint4" not in r.output
    assert "chromium-litert: fixed by pass quantized_weights: 8 violations" in r.output.splitlines()
    fixed = json.loads(run("check", src, "--target", "chromium-litert", "--json").output)[
        "targets"]["chromium-litert"]["fixed"]
    assert len(fixed) == 8 and {v["fixedBy"] for v in fixed} == {"quantized_weights"}
    assert "the 'quantized_weights' pass re-bases the weights to int4 (zero point -8; exact)" \
        in fixed[0]["fix"]
    lines = [line for line in r.output.splitlines() if " weights '" in line]
    assert lines == [
        "chromium-litert: dequantizeLinear 'up/dequantizeLinear' weights 'up_const' (uint4): "
        "re-based to int4, zero point -8 (exact; chromium-litert takes no uint4 there)",
        "chromium-litert: dequantizeLinear 'down/dequantizeLinear' weights 'down_const' "
        "(uint4): re-based to int4, zero point -8 (exact; chromium-litert takes no uint4 "
        "there)"]


def test_check_json_and_dequantize(tmp_path):
    src = _model(tmp_path)
    r = run("check", src, "--target", "coreml", "--json", "--dequantize")
    weights = json.loads(r.output)["targets"]["coreml"]["quantizedWeights"]
    assert [(w["op"], w["action"], w["newType"]) for w in weights] == [
        ("up/dequantizeLinear", "dequantize", "float32"),
        ("down/dequantizeLinear", "dequantize", "float32")]
    r = run("check", src, "--target", "coreml", "--json")
    weights = json.loads(r.output)["targets"]["coreml"]["quantizedWeights"]
    assert [(w["action"], w["newType"], w["shift"]) for w in weights] == \
        [("re-encode", "uint8", 0)] * 2


def test_convert_keeps_int4_for_chromium_litert_and_verifies_on_litert(tmp_path):
    src = _model(tmp_path)
    out = tmp_path / "decoder.tflite"
    r = run("convert", src, "-o", out, "--target", "chromium-litert", "--verify", "--verbose")
    assert r.exit_code == 0, r.output
    # what the pass did is a statistic: on stderr, with --verbose (stdout carries results)
    assert "quantized_weights: 2 dequantizeLinear of uint4: re-based to int4" in r.stderr
    assert "litert (exported .tflite)" in r.output and out.is_file()
    graph_out = tmp_path / "decoder.webnn"
    assert run("convert", src, "-o", graph_out, "--target", "chromium-litert").exit_code == 0
    r = run("check", graph_out, "--target", "chromium-litert")
    assert r.exit_code == 0, r.output
    assert "weights 'up_const_int4' (int4): kept int4" in r.output


def test_convert_dequantize_for_coreml_writes_float_weights_that_verify(tmp_path):
    src = _model(tmp_path)
    out = tmp_path / "decoder.webnn"
    r = run("convert", src, "-o", out, "--target", "coreml", "--dequantize", "--verify",
            "--verbose")
    assert r.exit_code == 0, r.output
    assert "dequantized to float32 at conversion time (--dequantize)" in r.stderr
    r = run("check", out, "--target", "coreml")
    assert r.exit_code == 0 and "dequantizeLinear" not in r.output, r.output


def test_dequantize_without_a_target_is_a_usage_error(tmp_path):
    r = run("convert", _model(tmp_path), "-o", tmp_path / "x.webnn", "--dequantize")
    assert r.exit_code == 2 and "--dequantize applies with --target" in r.output
