"""transformers.js's quantized files stepped in Chromium's WebNN, judged as ONNX Runtime's tests
judge them (tests/state/test_quantized_decoders.py, tests/state/test_seq2seq.py): the tiny
optimum Llama's merged decoder, unmerged pair and single model.onnx as q8 (`_quantized`:
DynamicQuantizeLinear + MatMulInteger; compared with ORT fed the prompt one token a step, as the
window takes it), q4 (`_q4`: MatMulNBits at accuracy level 0) and fp16 (under float16's bounds),
16 greedy tokens through the fixed-capacity window with `--target chromium-litert`; the JS page
of BART (float32, fp16, q8, q4), T5 and Marian (fp16, q8, q4) (`convert -o model.js --steps
16`, q4's with `--target chromium-litert`) given a prompt shorter than its encoder length,
ORT's tokens on the prompt alone. The
encoder-decoders' quantized files stepped by `verify` in the browser:
tests/browser/test_quantized_seq2seq_in_chromium.py. Fixtures:
models/optimum-tiny/{llama,bart,t5,marian}/."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cli.main import main
from converter.runtimes.chromium import browser_page
from converter.state.seq2seq import generate_seq2seq_on_onnxruntime, read_seq2seq_spec

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"
SUFFIX = {"q8": "quantized", "q4": "q4", "fp16": "fp16"}
PROMPT = "1,5,9"
TEXT = [5, 9, 14, 20, 33]
NEW = 16

# The same in the merged decoder and the pair (the same weights). Found by stepping ORT on the q8
# pair with every DynamicQuantizeLinear input exposed: at the 9th position (the token 0 after 8
# rows) one activation divided by its run-time scale is exactly k + 0.5 in ORT's float32 (at the
# other positions the nearest is 9e-8, relative, from a tie). Chromium's float32 kernels (other
# summation orders; the logits of the first 8 positions are within 7e-7 of ORT's) put it off the
# tie, so it rounds to the other uint8 neighbour; that one step in one activation, kept in the KV
# cache, moves every later position's logits by 0.03-0.07, past float32's bounds, while the tokens
# stay ORT's. The quantizer itself rounds ties as ORT does in the browser (exact ties at a scale
# of 3/255 give ORT's uint8 values). verify judges those positions against the source's own
# spread (verification/quantized_spread.py): ORT with every x / scale moved 1-2 ULP up gives
# Chromium's logits at positions 8-11 to 1e-7.
TIE = 8


def _verify(source: Path, *extra: str) -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["verify", str(source), "--steps", str(NEW), "--runtime",
                                  "chromium", "--target", "chromium-litert", "--json", *extra])
    assert r.exit_code in (0, 1), r.output  # 1: a mismatch, reported
    return r.exit_code, json.loads(r.output)


def _llama(form: str, kind: str) -> Path:
    """The merged decoder, the pair's first file (its with-past twin found beside it), or
    optimum 2.x's single model.onnx."""
    stem = {"merged": "decoder_model_merged", "pair": "decoder_model", "single": "model"}[form]
    return ROOT / "llama" / f"{stem}_{SUFFIX[kind]}.onnx"


@pytest.mark.parametrize("form", ["merged", "pair", "single"])
@pytest.mark.parametrize("kind", ["q8", "q4", "fp16"])
def test_a_quantized_decoder_chooses_onnx_runtimes_16_tokens_in_chromium(browser_limits, form,
                                                                         kind):
    code, report = _verify(_llama(form, kind), "--cache-capacity", "20", "--prompt", PROMPT)
    assert report["graphRuntime"] == "chromium"
    assert report["graphTokens"] == report["sourceTokens"] and len(report["graphTokens"]) == NEW
    assert len(set(report["sourceTokens"])) >= 6  # a sequence, not one token repeated
    assert report["sourceRuntime"] == ("onnxruntime (the prompt one token a step)"
                                       if kind == "q8" else "onnxruntime")
    # the prompt's positions, before any rounding tie, within float32's (float16's) bounds
    assert all(p["passed"] for p in report["positions"][:3]), report["positions"][:3]


@pytest.mark.parametrize("form", ["merged", "pair", "single"])
@pytest.mark.parametrize("kind", ["q8", "q4", "fp16"])
def test_every_position_of_a_quantized_decoder_passes_in_chromium(browser_limits, form, kind):
    """q8: the positions before the tie within float32's bounds, the later ones (outside
    them) within twice the source's own spread at each, as the report says."""
    code, report = _verify(_llama(form, kind), "--cache-capacity", "20", "--prompt", PROMPT)
    assert code == 0 and report["passed"], \
        [p for p in report["positions"] if not p["passed"]][:1]
    assert len(report["positions"]) == 3 + NEW - 1
    if kind != "q8":
        return
    decided = [p["decidedBy"] for p in report["positions"]]
    assert decided[:TIE] == ["webnn vs source within the budget"] * TIE
    assert all("within 2x the source's own spread at this position" in d
               for d in decided[TIE:]), decided[TIE:]
    assert all(1e-3 < p["maxAbs"] <= 2 * p["sourceNoise"] for p in report["positions"][TIE:])
    judged = 3 + NEW - 1 - TIE
    assert f"positions {TIE}-{3 + NEW - 2} ({judged} of {judged} passed by it)" in \
        report["notes"][-1]


def _bart(kind: str, arch: str = "bart") -> Path:
    """BART's (or `arch`'s) merged decoder of `kind` (fp32: the float32 export)."""
    return ROOT / arch / ("decoder_model_merged.onnx" if kind == "fp32" else
                          f"decoder_model_merged_{SUFFIX[kind]}.onnx")


def _page_run(tmp_path: Path, source: Path, length: int, *extra: str,
              logits: bool = False) -> dict:
    """`convert DECODER -o model.js --steps 16 --dim encoder_sequence_length=LENGTH EXTRA`:
    the page's 16 tokens after TEXT, generated in the browser with no Python; with `logits`,
    also each new token's logits row, from the module's generate() run again in the page (the
    page shows only the tokens)."""
    r = CliRunner().invoke(main, ["convert", str(source), "-o", str(tmp_path / "model.js"),
                                  "--steps", str(NEW), "--dim",
                                  f"encoder_sequence_length={length}", *extra])
    assert r.exit_code == 0, r.output
    page, url = browser_page(tmp_path)
    try:
        page.goto(url + "model.html?prompt=" + ",".join(map(str, TEXT)) + f"&tokens={NEW}")
        page.wait_for_function("window.webnnResult !== undefined", timeout=300_000)
        got = page.evaluate("window.webnnResult")
        if logits and "error" not in got:
            got["logits"] = page.evaluate("""async ([ids, count]) => {
                const m = await import("./model.js");
                const context = await navigator.ml.createContext();
                const result = await m.generate(context, await m.loadWeights(),
                                                {input_ids: ids}, m.CONFIG.startTokens, count);
                return result.logits.map((row) => Array.from(row));
            }""", [TEXT, NEW])
    finally:
        page.close()
    assert "error" not in got, got
    return got


def _page_tokens(tmp_path: Path, source: Path, length: int, *extra: str) -> list[int]:
    return _page_run(tmp_path, source, length, *extra)["tokens"]


def _ort_generation(source: Path, length: int):
    """ORT on the source files fed TEXT padded to `length` with 0, its attention_mask 0
    there (`length` 5: TEXT alone, as transformers.js runs it)."""
    pad = length - len(TEXT)
    given = {"input_ids": np.array([TEXT + [0] * pad], np.int64),
             "attention_mask": np.array([[1] * len(TEXT) + [0] * pad], np.int64)}
    return generate_seq2seq_on_onnxruntime(source, given,
                                           read_seq2seq_spec(source).start_tokens, NEW)


def _ort_tokens(source: Path, length: int) -> list[int]:
    return _ort_generation(source, length).tokens


@pytest.mark.parametrize("arch,kind", [("bart", "fp32"), ("bart", "fp16"), ("bart", "q8"),
                                       ("bart", "q4"), ("t5", "fp16"), ("t5", "q8"),
                                       ("t5", "q4"), ("marian", "fp16"), ("marian", "q8"),
                                       ("marian", "q4")])
def test_the_page_of_an_encoder_decoder_generates_the_tokens_of_the_prompt_alone(
        browser_limits, tmp_path, arch, kind):
    """A page built for prompts of up to 8 ids, given 5: the encoder runs at 5 (its module
    takes the prompt's length), its output padded with masked zero rows to 8 for the decoder;
    the tokens are ORT's on the 5 ids alone (transformers.js's run), q8 included. q4's
    MatMulNBits weights are uint4, which Chromium refuses to build: its page is converted
    with --target chromium-litert, which rewrites the encoder's and every decoder graph."""
    source = _bart(kind, arch)
    want = _ort_generation(source, len(TEXT))
    extra = ["--target", "chromium-litert"] if kind == "q4" else []
    # the tiny random BART's q4 repeats one token on every text tried: its logits at each
    # position are compared too, so that the tokens are not one argmax by chance
    repeats = (arch, kind) == ("bart", "q4")
    got = _page_run(tmp_path, source, 8, *extra, logits=repeats)
    assert got["tokens"] == want.tokens and len(set(want.tokens)) >= (1 if repeats else 3)
    if repeats:
        page = np.array(got["logits"], np.float64)
        ort = np.array([np.asarray(row).reshape(-1) for row in want.logits], np.float64)
        assert page.shape == ort.shape == (NEW, page.shape[1])
        # float32 kernels in other summation orders (3.6e-6 measured, logits spanning 7),
        # while the rows of successive positions differ by 0.1 and more: a step fed the
        # wrong cache gives other rows
        assert np.abs(ort[1:] - ort[:-1]).max() > 0.1
        assert np.abs(page - ort).max() < 1e-4


# Why the page runs the encoder at the prompt's length rather than padding the prompt: a q8
# encoder's DynamicQuantizeLinear scales each tensor over all its rows, padding included, so
# padded rows change every real row's numbers, and the cross-attention caches the decoder
# quantizes from them: ORT fed the padded ids parts at the third token from ORT on the 5 ids
# alone. The float16 (and float32) encoder gives the same tokens either way.
@pytest.mark.parametrize("kind", ["fp16", "q8"])
def test_padding_the_prompt_changes_only_q8s_tokens(kind):
    source = _bart(kind)
    same = _ort_tokens(source, 8) == _ort_tokens(source, len(TEXT))
    assert same is (kind != "q8")


def _ort_logits_of_padded_output(source: Path, length: int) -> list[np.ndarray]:
    """What the page feeds the decoder, on ORT: the encoder on TEXT alone, its output padded
    with zero rows to `length`, the encoder_attention_mask 0 there; 16 greedy steps."""
    from converter.runtimes.source_runs import run_onnx
    from converter.state.kv_cache import HIDDEN_STATES

    s = read_seq2seq_spec(source)
    ids = np.array([TEXT], np.int64)
    hidden = run_onnx(s.encoder, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[
        "last_hidden_state"]
    padded = np.zeros((1, length, hidden.shape[2]), hidden.dtype)
    padded[:, :len(TEXT)] = hidden
    side = {HIDDEN_STATES: padded, "encoder_attention_mask": np.array(
        [[1] * len(TEXT) + [0] * (length - len(TEXT))], np.int64)}
    spec = s.decoder
    past = {n: np.zeros(spec.past_shape(0), np.float32) for n, _ in [*spec.pairs, *s.cross]}
    logits, token = [], s.start_tokens[0]
    for position in range(NEW):
        out = run_onnx(spec.path, {spec.input_ids: np.array([[token]], np.int64), **side, **past,
                                   spec.branch: np.array([position > 0])})
        if position == 0:
            past.update({n: out[present] for n, present in s.cross})
        past.update({n: out[present] for n, present in spec.pairs})
        logits.append(np.asarray(out["logits"]).reshape(-1))
        token = int(np.argmax(logits[-1]))
    return logits


@pytest.mark.parametrize("kind", ["fp32", "fp16", "q8"])
def test_masked_zero_rows_after_the_encoders_output_change_no_logit(kind):
    """The page's padding, on ORT: the decoder's logits with the encoder's output padded by
    masked zero rows are exactly those of the prompt alone (zero rows are inside every range
    a q8 decoder's DynamicQuantizeLinear takes; masked rows weigh 0 in the softmax)."""
    source = _bart(kind)
    want = generate_seq2seq_on_onnxruntime(source, {"input_ids": TEXT},
                                           read_seq2seq_spec(source).start_tokens, NEW)
    got = _ort_logits_of_padded_output(source, 8)
    assert all(np.array_equal(g, np.asarray(w).reshape(-1)) for g, w in zip(got, want.logits))
    assert len(got) == len(want.logits) == NEW
