"""Decoders on the command line: `convert --cache-capacity`, `run --steps N --prompt`, and
`verify --steps N --prompt` against ONNX Runtime on the source (the tiny genai-builder Llama)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from cli.main import main
from converter.state.generation import generate_on_onnxruntime

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "tiny-llama"


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_verify_decodes_on_both_sides_as_json():
    source = FIXTURES / "int4" / "model.onnx"
    r = run("verify", source, "--cache-capacity", 16, "--steps", 6, "--prompt", "1,5,9",
            "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    want = generate_on_onnxruntime(source, [1, 5, 9], 6).tokens
    assert report["passed"] and report["sourceTokens"] == report["graphTokens"] == want
    assert len(report["positions"]) == 3 + 5
    assert max(p["maxAbs"] for p in report["positions"]) < 1e-4


def test_a_converted_decoder_runs_and_verifies_from_its_file(tmp_path):
    source = FIXTURES / "fp32" / "model.onnx"
    graph = tmp_path / "llama.webnn"
    r = run("convert", source, "--cache-capacity", 12, "--state",
            "past_key_values.*=present.*", "-o", graph)
    assert r.exit_code == 0, r.output
    r = run("run", graph, "--steps", 4, "--prompt", "1,5,9", "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    tokens = np.load(tmp_path / "out" / "tokens.npy")
    logits = np.load(tmp_path / "out" / "logits.npy")
    reference = generate_on_onnxruntime(source, [1, 5, 9], 4)
    assert tokens.tolist() == reference.tokens
    assert logits.shape == (3 + 3, 256)
    np.testing.assert_allclose(logits, np.stack(reference.logits), atol=1e-4, rtol=1e-3)
    r = run("verify", source, "--graph", graph, "--steps", 4, "--prompt", "1,5,9")
    assert r.exit_code == 0, r.output
    assert "graph tokens: the same" in r.output


def test_decoder_mistakes_are_one_line_errors(tmp_path):
    source = FIXTURES / "fp32" / "model.onnx"
    r = run("convert", source, "--state", "past_key_values.*=present.*", "--dim",
            "past_sequence_length=4", "--dim", "total_sequence_length=5", "--dim",
            "batch_size=1", "--dim", "sequence_length=1", "--dim", "kv_cache_dim=16",
            "-o", tmp_path / "x.webnn")
    assert r.exit_code == 2 and "concat form" in r.output and "Traceback" not in r.output
    assert not list(tmp_path.iterdir())
    r = run("verify", source, "--cache-capacity", 8, "--steps", 2)
    assert r.exit_code == 2 and "--prompt" in r.output
    r = run("convert", source, "--cache-capacity", 8, "--state", "kv_*=kv_out_*", "-o",
            tmp_path / "y.webnn")
    assert r.exit_code == 2 and "matches no input" in r.output
    r = run("verify", source, "--cache-capacity", 4, "--steps", 4, "--prompt", "1,5")
    assert r.exit_code == 2 and "the cache holds 4 tokens" in r.output
