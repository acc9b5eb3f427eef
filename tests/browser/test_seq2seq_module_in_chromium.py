"""`convert DECODER.onnx -o NAME.js --steps N` on an encoder-decoder (models/optimum-tiny/: T5,
Whisper): a module and page that generate in Chromium's WebNN with no Python at run time (the
encoder once, the decoder a graph per past length, the caches fed back by the module's
generate()); the page's greedy tokens are ONNX Runtime's on the source files, and the decoder's
builders share one weights file. Whisper's q4 file (MatMulNBits: uint4 weights, which Chromium
refuses) with --target chromium-litert, its page fed the same seeded features; its q8 and fp16
files too (the fp16 encoder's features rounded to float16 in the page, as ORT is fed)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from cli.main import main
from converter.runtimes.chromium import browser_page
from converter.state.seq2seq import generate_seq2seq_on_onnxruntime, read_seq2seq_spec
from converter.state.seq2seq_js import seeded_features

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"
PROMPT = [5, 9, 14, 20, 33]


def _page_tokens(folder: Path, query: str) -> dict:
    page, url = browser_page(folder)
    try:
        page.goto(url + "model.html" + query)
        page.wait_for_function("window.webnnResult !== undefined", timeout=300_000)
        return page.evaluate("window.webnnResult")
    finally:
        page.close()


def _decoder_weight_bytes(source: Path) -> int:
    """The bytes of the decoder file's initializers (each branch's, once)."""
    model = onnx.load(source)
    seen, total = set(), 0
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        for t in g.initializer:
            if t.name not in seen:
                seen.add(t.name)
                total += len(t.raw_data) or 4 * len(t.float_data)
        for node in g.node:
            graphs.extend(a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH)
    return total


@pytest.mark.parametrize("arch,name", [("t5", "decoder_model_merged.onnx"),
                                       ("t5", "decoder_model.onnx"),
                                       ("whisper", "decoder_model_merged.onnx"),
                                       ("bart", "decoder_model_merged.onnx"),
                                       ("marian", "decoder_model_merged.onnx"),
                                       ("whisper", "decoder_model_merged_q4.onnx"),
                                       ("whisper", "decoder_model_merged_quantized.onnx"),
                                       ("whisper", "decoder_model_merged_fp16.onnx")])
def test_the_page_of_an_encoder_decoder_generates_onnxruntimes_16_tokens(browser_limits,
                                                                         tmp_path, arch, name):
    source = ROOT / arch / name
    args = ["convert", str(source), "-o", str(tmp_path / "model.js"), "--steps", "16"]
    if arch != "whisper":
        args += ["--dim", "encoder_sequence_length=8"]  # the prompt (5 ids) padded to 8
    q4 = "_q4" in name
    if q4:  # every graph rewritten for the browser's limits (uint4 weights)
        args += ["--target", "chromium-litert"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    got = _page_tokens(tmp_path, "?prompt=" + ",".join(map(str, PROMPT)) + "&tokens=16")
    assert "error" not in got, got
    given = {"input_features": seeded_features((1, 8, 32))} if arch == "whisper" else \
        {"input_ids": PROMPT}
    start = read_seq2seq_spec(source).start_tokens
    want = generate_seq2seq_on_onnxruntime(source, given, start, 16)
    # a sequence, not one token repeated (Whisper's q8 decodes 3 distinct ones)
    assert got["tokens"] == want.tokens and len(set(want.tokens)) >= 3
    assert len(got["stepMs"]) == 16
    # two builders (the first step's graph, and one for past lengths 1..15, its shapes
    # expressions of the length), one weights file about one decoder's (not 16 times it;
    # q4's uint4 weights are float32 after the target's passes: 8 times their packed bytes)
    weights = (tmp_path / "model.decoder.weights").stat().st_size
    assert weights < (8 if q4 else 1.5) * _decoder_weight_bytes(source)
    module = (tmp_path / "model.decoder.js").read_text()
    assert re.findall(r"^async function build(\d+)\(", module, re.M) == ["0", "1"]
    assert "2 builders for past_decoder_sequence_length in 0..15, one for each of 0; 1..15" \
        in module


def test_a_prompt_too_long_or_past_the_vocabulary_is_refused_on_the_page(browser_limits, tmp_path):
    r = CliRunner().invoke(main, ["convert", str(ROOT / "t5" / "decoder_model.onnx"), "-o",
                                  str(tmp_path / "model.js"), "--steps", "4", "--dim",
                                  "encoder_sequence_length=3"])
    assert r.exit_code == 0, r.output
    got = _page_tokens(tmp_path, "?prompt=5,9,14,20&tokens=2")
    assert got == {"error": "the encoder takes 1..3 token ids, got 4"}
    got = _page_tokens(tmp_path, "?prompt=5,9,14&tokens=5")  # 1 start + 5 new - 1 > 4
    assert "this module takes 4 decoder positions" in got["error"]
    got = _page_tokens(tmp_path, "?prompt=5,96&tokens=2")  # the vocabulary is 96 tokens
    assert got == {"error": "the encoder's input_ids must be integers in 0..95, got 96"}


def test_the_page_rounds_features_to_float16_as_numpy_does(browser_limits, tmp_path):
    """The page's float32 -> float16 rounding (an fp16 Whisper's features), bit for bit against
    numpy over normals, subnormals, ties to even, overflow, signed zeros, infinities and NaN."""
    r = CliRunner().invoke(main, ["convert", str(ROOT / "whisper" / "decoder_model_merged.onnx"),
                                  "-o", str(tmp_path / "model.js"), "--steps", "2"])
    assert r.exit_code == 0, r.output
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([
        bits.view(np.float32),  # every exponent, NaNs included
        np.float16(np.arange(0, 2048)).astype(np.float32) * np.float32(2.0 ** -24),  # subnormals
        (np.arange(-40, 40, dtype=np.float32) + 0.5) * np.float32(2.0 ** -10),  # ties
        np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e9, -1e9, np.inf, -np.inf,
                  2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -26, 6.1035156e-05], np.float32),
    ]).astype(np.float32)
    finite = values[~np.isnan(values)]
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "model.html?tokens=1")
        page.wait_for_function("window.webnnResult !== undefined", timeout=300_000)
        got = page.evaluate("""async (values) => {
            const m = await import('./model.js');
            return values.map((v) => m.float16Bits(v));
        }""", finite.tolist())
        nans = page.evaluate("""async () => {
            const m = await import('./model.js');
            return [m.float16Bits(NaN), m.float16Bits(-NaN)];
        }""")
    finally:
        page.close()
    with np.errstate(over="ignore"):
        want = finite.astype(np.float16).view(np.uint16)
    assert np.array_equal(np.array(got, np.uint16), want), \
        [(v, g, w) for v, g, w in zip(finite, got, want) if g != w][:5]
    assert all((n & 0x7c00) == 0x7c00 and (n & 0x3ff) for n in nans)
