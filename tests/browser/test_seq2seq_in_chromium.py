"""Optimum's encoder-decoders (models/optimum-tiny/: Whisper, T5 merged and unmerged, BART)
generated greedily in Chromium's WebNN: the encoder once, each decoder step's graph (the
concat form, the cross-attention caches of the first step fed back) in the emitted module's
createSession; the same tokens as ONNX Runtime on the source files."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.state.seq2seq import generate_seq2seq_on_onnxruntime

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"


@pytest.mark.parametrize("arch,name", [("whisper", "decoder_model_merged.onnx"),
                                       ("t5", "decoder_model_merged.onnx"),
                                       ("t5", "decoder_model.onnx")])
def test_an_encoder_decoder_generates_16_tokens_in_chromium(browser_limits, arch, name):
    given = {"input_features": np.random.default_rng(0).standard_normal((1, 8, 32)).astype(
        np.float32)} if arch == "whisper" else {"input_ids": [5, 9, 14, 20, 33]}
    source = ROOT / arch / name
    loop = converter.load_seq2seq(source, runtime="chromium")
    loop.encode(given)
    got = converter.generate(loop, loop.start_tokens, 16)
    want = generate_seq2seq_on_onnxruntime(source, given, loop.start_tokens, 16)
    assert got.tokens == want.tokens and len(set(want.tokens)) >= 4
    np.testing.assert_allclose(np.stack(got.logits), np.stack(want.logits), atol=1e-4,
                               rtol=1e-3)


def test_verify_steps_of_bart_in_chromium(browser_limits):
    r = CliRunner().invoke(main, ["verify", str(ROOT / "bart" / "decoder_model_merged.onnx"),
                                  "--steps", "8", "--prompt", "5,9,14,20,33", "--runtime",
                                  "chromium", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and report["graphRuntime"] == "chromium"
    assert report["graphTokens"] == report["sourceTokens"] and len(report["graphTokens"]) == 8


def test_run_steps_of_whisper_in_chromium(browser_limits, tmp_path):
    features = np.random.default_rng(0).standard_normal((1, 8, 32)).astype(np.float32)
    np.save(tmp_path / "features.npy", features)
    source = ROOT / "whisper" / "decoder_model_merged.onnx"
    r = CliRunner().invoke(main, ["run", str(source), "--steps", "6", "--prompt", "1",
                                  "--input", f"input_features={tmp_path / 'features.npy'}",
                                  "--runtime", "chromium", "--output-dir", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "out" / "tokens.npy").tolist() == generate_seq2seq_on_onnxruntime(
        source, {"input_features": features}, [1], 6).tokens
