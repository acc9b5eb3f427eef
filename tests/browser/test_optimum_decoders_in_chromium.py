"""Optimum's decoders (models/optimum-tiny/: merged, unmerged pair, single model.onnx; a GPT-2
merged) decoded greedily in Chromium's WebNN (converter.generate, verify --steps, run
--steps): one fixed-capacity graph (a sliding window of N-1 past rows, the caches kept as
MLTensors on the browser's context by the emitted module's createSession), the same tokens as
ONNX Runtime on the source."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.state.generation import generate_on_onnxruntime

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny" / "llama"
PROMPT = [1, 5, 9]


@pytest.mark.parametrize("name", ["decoder_model_merged.onnx", "decoder_model.onnx",
                                  "model.onnx"])
def test_each_optimum_form_generates_16_tokens_in_chromium(browser_limits, name):
    """converter.generate on a Session in the browser: the merged decoder, the pair (its
    with-past twin is the window's graph) and the single form."""
    source = FIXTURES / name
    graph = converter.load_decoder(source, capacity=20)
    want = generate_on_onnxruntime(source, PROMPT, 16)
    with converter.Session(graph, runtime="chromium") as session:
        got = converter.generate(session, PROMPT, 16)
        state = session.read_state()
    assert got.tokens == want.tokens and len(set(want.tokens)) >= 6
    np.testing.assert_allclose(np.stack(got.logits), np.stack(want.logits), atol=1e-4,
                               rtol=1e-3)
    # the window the browser holds: the last 19 rows, the 18 fed before the last token at its
    # end (what ONNX Runtime's presents hold before it), one empty row before them
    used = len(PROMPT) + 16 - 1
    cache = state["past_key_values.1.value"]
    assert cache.shape == (1, 2, 19, 8)
    assert not cache[:, :, :19 - used].any() and np.abs(cache[:, :, 19 - used:]).min() > 0


@pytest.mark.parametrize("name", ["decoder_model.onnx", "model.onnx",
                                  "../gpt2/decoder_model_merged.onnx"])
def test_verify_steps_in_chromium_for_the_pair_the_single_form_and_gpt2(browser_limits, name):
    r = CliRunner().invoke(main, ["verify", str(FIXTURES / name), "--cache-capacity", "24",
                                  "--steps", "16", "--prompt", "1,5,9", "--runtime",
                                  "chromium", "--target", "chromium-litert", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and report["graphRuntime"] == "chromium"
    assert report["graphTokens"] == report["sourceTokens"] and len(report["graphTokens"]) == 16


@pytest.mark.parametrize("name", ["decoder_model_merged.onnx", "decoder_model.onnx",
                                  "model.onnx"])
def test_run_steps_of_each_optimum_form_in_chromium(browser_limits, tmp_path, name):
    """run --steps on the source file itself: converted to the window, decoded in the browser,
    the tokens and logits ONNX Runtime gives."""
    source = FIXTURES / name
    r = CliRunner().invoke(main, ["run", str(source), "--steps", "8", "--prompt", "1,5,9",
                                  "--cache-capacity", "16", "--runtime", "chromium",
                                  "--target", "chromium-litert", "--output-dir",
                                  str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    want = generate_on_onnxruntime(source, PROMPT, 8)
    assert np.load(tmp_path / "out" / "tokens.npy").tolist() == want.tokens
    np.testing.assert_allclose(np.load(tmp_path / "out" / "logits.npy"),
                               np.stack(want.logits), atol=1e-4, rtol=1e-3)


def test_run_steps_of_a_converted_merged_decoder_in_chromium(browser_limits, tmp_path):
    """convert --cache-capacity writes the window graph with its state; run reads it back and
    decodes it in the browser."""
    source = FIXTURES / "decoder_model_merged.onnx"
    r = CliRunner().invoke(main, ["convert", str(source), "--cache-capacity", "16", "-o",
                                  str(tmp_path / "merged.webnn")])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["run", str(tmp_path / "merged.webnn"), "--steps", "8",
                                  "--prompt", "1,5,9", "--runtime", "chromium",
                                  "--output-dir", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "out" / "tokens.npy").tolist() == \
        generate_on_onnxruntime(source, PROMPT, 8).tokens
