"""Optimum's encoder-decoders generated end to end on ONNX Runtime: the encoder once, the
decoder in its concat form (the first step through the merged file's no-cache branch or the
unmerged decoder_model.onnx, which compute the cross-attention caches; each later step feeding
them back unchanged), the same greedy tokens and logits as ONNX Runtime on the source files.
Fixtures: models/optimum-tiny/{whisper,t5,bart,marian}/ (random 2-layer models written by
optimum's exporter, models/make_optimum_seq2seq.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.errors import ConverterError
from converter.state.seq2seq import generate_seq2seq_on_onnxruntime

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"
TEXT = [5, 9, 14, 20, 33]
NEW = 16
FORMS = [("whisper", "decoder_model_merged.onnx"), ("t5", "decoder_model_merged.onnx"),
         ("t5", "decoder_model.onnx"), ("t5", "decoder_with_past_model.onnx"),
         ("bart", "decoder_model_merged.onnx"), ("marian", "decoder_model_merged.onnx")]


def features() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((1, 8, 32)).astype(np.float32)


def encoder_input(arch: str) -> dict:
    return {"input_features": features()} if arch == "whisper" else {"input_ids": TEXT}


def _hand_written_tokens(arch: str) -> list[int]:
    """Greedy tokens written out by hand on ONNX Runtime with the merged file, as
    transformers.js runs it: the encoder once; the first decoder step with dummy empty pasts
    and use_cache_branch false; later steps with the presents (the encoder ones from the first
    step only)."""
    def session(name):
        s = ort.InferenceSession(str(ROOT / arch / name), providers=["CPUExecutionProvider"])
        return s, [o.name for o in s.get_outputs()], {i.name for i in s.get_inputs()}

    encoder, _, _ = session("encoder_model.onnx")
    decoder, names, takes = session("decoder_model_merged.onnx")
    given = {"input_features": features()} if arch == "whisper" else {
        "input_ids": np.array([TEXT], np.int64), "attention_mask": np.ones((1, 5), np.int64)}
    hidden = encoder.run(["last_hidden_state"], given)[0]
    start = json.loads((ROOT / arch / "config.json").read_text())["decoder_start_token_id"]
    past = {f"past_key_values.{i}.{side}.{kv}": np.zeros((1, 4, 0, 8), np.float32)
            for i in range(2) for side in ("decoder", "encoder") for kv in ("key", "value")}
    tokens, new = [], start
    while len(tokens) < NEW:
        feeds = {"input_ids": np.array([[new]], np.int64), "encoder_hidden_states": hidden,
                 "encoder_attention_mask": np.ones((1, hidden.shape[1]), np.int64),
                 "use_cache_branch": np.array([bool(tokens)]), **past}
        out = dict(zip(names, decoder.run(None, {k: v for k, v in feeds.items() if k in takes})))
        for name in past:
            if ".decoder." in name or not tokens:
                past[name] = out[name.replace("past_key_values", "present")]
        tokens.append(new := int(np.argmax(out["logits"][0, -1])))
    return tokens


@pytest.fixture(scope="module")
def expected():
    return {}


def _expected(expected, arch):
    if arch not in expected:
        expected[arch] = _hand_written_tokens(arch)
        assert len(set(expected[arch])) >= 4, expected[arch]  # a sequence, not one token
    return expected[arch]


@pytest.mark.parametrize("arch,name", FORMS)
def test_the_reference_loop_gives_the_hand_written_tokens(arch, name, expected):
    """generate_seq2seq_on_onnxruntime feeds every form what optimum does (the merged file its
    branch, the pair its first file, the encoder caches of the first step)."""
    start = [json.loads((ROOT / arch / "config.json").read_text())["decoder_start_token_id"]]
    got = generate_seq2seq_on_onnxruntime(ROOT / arch / name, encoder_input(arch), start, NEW)
    assert got.tokens == _expected(expected, arch)


@pytest.mark.parametrize("arch,name", FORMS)
def test_the_concat_form_generates_16_tokens_as_onnx_runtime(arch, name, expected):
    loop = converter.load_seq2seq(ROOT / arch / name)
    loop.encode(encoder_input(arch))
    got = converter.generate(loop, loop.start_tokens, NEW)
    assert got.tokens == _expected(expected, arch)
    want = generate_seq2seq_on_onnxruntime(ROOT / arch / name, encoder_input(arch),
                                           loop.start_tokens, NEW)
    assert len(got.logits) == len(want.logits) == NEW
    np.testing.assert_allclose(np.stack(got.logits), np.stack(want.logits), atol=1e-4,
                               rtol=1e-3)
    assert loop.conversions == NEW  # one graph per length
    # later steps read the cross caches back: the encoder's 16 or 5 rows, never grown
    rows = 16 if arch == "whisper" else len(TEXT)
    last = loop.last_graph
    assert last.inputs["past_key_values.1.encoder.value"].shape == (1, 4, rows, 8)
    assert last.inputs["past_key_values.1.decoder.value"].shape == (1, 4, NEW - 1, 8)
    assert not any(".encoder." in name for name in last.outputs)  # placeholders dropped
    assert loop.cross["past_key_values.0.encoder.key"].shape == (1, 4, rows, 8)


def test_encoding_again_starts_a_new_text():
    loop = converter.load_seq2seq(ROOT / "bart" / "decoder_model_merged.onnx")
    loop.encode({"input_ids": [7, 7, 40]})
    first = converter.generate(loop, loop.start_tokens, 4).tokens
    loop.encode({"input_ids": TEXT})
    again = converter.generate(loop, loop.start_tokens, 4).tokens
    assert again == generate_seq2seq_on_onnxruntime(
        ROOT / "bart" / "decoder_model_merged.onnx", {"input_ids": TEXT},
        loop.start_tokens, 4).tokens
    assert first == generate_seq2seq_on_onnxruntime(
        ROOT / "bart" / "decoder_model_merged.onnx", {"input_ids": [7, 7, 40]},
        loop.start_tokens, 4).tokens


@pytest.mark.parametrize("case,match", [
    ("no encoder", "no encoder encoder_model.onnx beside the decoder"),
    ("encoder named", "this is the encoder: generation starts from the decoder"),
    ("not encoded", "the encoder has not run"),
    ("wrong input", "the encoder has no input 'input_features'"),
    ("no config", "no decoder_start_token_id: config.json beside the decoder is missing"),
    ("bad config", "config.json's decoder_start_token_id -3 is not a token id"),
    ("capacity", "an encoder-decoder's decoder takes no attention mask over its own rows"),
    ("config not json", "config.json:1:2: Expecting property name .* must be valid JSON"),
    ("config too big", "config.json is over 1048576 bytes"),
    ("config a list", "config.json is not a JSON object"),
    ("text outside", "token id 96 is outside the vocabulary 0..95"),
    ("text as floats", "the encoder's input_ids are float64, not token ids"),
    ("encoder is a decoder", "the encoder gives no 'last_hidden_state'"),
    ("encoder is junk", "encoder_model.onnx"),
])
def test_a_bad_request_is_one_clear_line(tmp_path, case, match):
    for name in ("encoder_model.onnx", "decoder_model_merged.onnx", "config.json"):
        shutil.copyfile(ROOT / "t5" / name, tmp_path / name)
    decoder = tmp_path / "decoder_model_merged.onnx"
    with pytest.raises(ConverterError, match=match) as caught:
        if case == "no encoder":
            (tmp_path / "encoder_model.onnx").unlink()
            converter.load_seq2seq(decoder)
        elif case == "encoder named":
            converter.load_seq2seq(tmp_path / "encoder_model.onnx")
        elif case == "not encoded":
            converter.generate(converter.load_seq2seq(decoder), [0], 2)
        elif case == "wrong input":
            converter.load_seq2seq(decoder).encode({"input_features": features()})
        elif case == "no config":
            (tmp_path / "config.json").unlink()
            converter.load_seq2seq(decoder).start_tokens
        elif case == "bad config":
            (tmp_path / "config.json").write_text('{"decoder_start_token_id": -3}')
            converter.load_seq2seq(decoder)
        elif case.startswith("config"):
            (tmp_path / "config.json").write_text(
                {"config not json": "{'a': 1}", "config too big": " " * (1 << 20) + "{}",
                 "config a list": "[0]"}[case])
            converter.load_seq2seq(decoder)
        elif case.startswith("encoder is"):
            if case == "encoder is junk":
                (tmp_path / "encoder_model.onnx").write_bytes(b"\x08\xff" * 50)
            else:
                shutil.copyfile(decoder, tmp_path / "encoder_model.onnx")
            converter.load_seq2seq(decoder)
        elif case.startswith("text"):
            converter.load_seq2seq(decoder).encode(
                {"input_ids": [5, 96] if case == "text outside" else [5.0, 9.5]})
        else:
            converter.load_decoder(decoder, capacity=16)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("arch,name", [("whisper", "decoder_model_merged.onnx"),
                                       ("t5", "decoder_model.onnx"),
                                       ("marian", "decoder_model_merged.onnx")])
def test_verify_steps_16_tokens_of_an_encoder_decoder(tmp_path, arch, name):
    """--prompt is the encoder's text (T5, Marian) or the decoder's start (Whisper, its
    features from --input)."""
    args = ["verify", str(ROOT / arch / name), "--steps", str(NEW), "--json"]
    if arch == "whisper":
        np.save(tmp_path / "features.npy", features())
        args += ["--prompt", "1", "--input", f"input_features={tmp_path / 'features.npy'}"]
    else:
        args += ["--prompt", ",".join(map(str, TEXT))]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and report["graphTokens"] == report["sourceTokens"]
    assert len(report["graphTokens"]) == NEW and len(report["positions"]) == NEW
    assert len(set(report["graphTokens"])) >= 4
    assert "the encoder encoder_model.onnx ran once on" in report["notes"][0]


def test_run_steps_writes_the_tokens_of_an_encoder_decoder(tmp_path):
    r = CliRunner().invoke(main, ["run", str(ROOT / "bart" / "decoder_model_merged.onnx"),
                                  "--steps", "6", "--prompt", ",".join(map(str, TEXT)),
                                  "--output-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    start = json.loads((ROOT / "bart" / "config.json").read_text())["decoder_start_token_id"]
    assert np.load(tmp_path / "tokens.npy").tolist() == generate_seq2seq_on_onnxruntime(
        ROOT / "bart" / "decoder_model_merged.onnx", {"input_ids": TEXT}, [start], 6).tokens
    assert np.load(tmp_path / "logits.npy").shape == (6, 96)


def test_run_seeds_whisper_features_and_says_so(tmp_path):
    r = CliRunner().invoke(main, [
        "run", str(ROOT / "whisper" / "decoder_model_merged.onnx"), "--steps", "3",
        "--prompt", "1", "--seed", "4", "--output-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "run: input 'input_features' not given: float32[1, 8, 32]" in r.output
    assert np.load(tmp_path / "tokens.npy").shape == (3,)


@pytest.mark.parametrize("extra,match", [
    (["--cache-capacity", "16"], "an encoder-decoder's decoder takes no attention mask"),
    (["--bisect"], "an encoder-decoder is verified by stepping its concat"),
    (["--input", "input_ids=IDS"], "--input 'input_ids' is not an input of the encoder"),
])
def test_verify_refuses_what_an_encoder_decoder_cannot_take_in_one_line(tmp_path, extra, match):
    np.save(tmp_path / "ids.npy", np.array([[1, 2]], np.int64))
    extra = [e.replace("IDS", str(tmp_path / "ids.npy")) for e in extra]
    r = CliRunner().invoke(main, ["verify", str(ROOT / "t5" / "decoder_model_merged.onnx"),
                                  "--steps", "2", "--prompt", "5,9", *extra])
    assert r.exit_code == 2, r.output
    assert match in r.output and r.output.count("\n") == 1 and "Traceback" not in r.output


DTYPE_FORMS = [("whisper", "decoder_model_merged"), ("t5", "decoder_model_merged"),
               ("t5", "decoder_model"), ("bart", "decoder_model_merged"),
               ("marian", "decoder_model_merged")]


@pytest.mark.parametrize("suffix", ["quantized", "q4", "fp16"])
@pytest.mark.parametrize("arch,stem", DTYPE_FORMS)
def test_the_quantized_and_float16_forms_step_with_onnx_runtimes_tokens(arch, stem, suffix):
    """transformers.js's q8, q4 and fp16 files of each architecture (encoder and decoder of one
    suffix, models/make_quantized_seq2seq.py; T5's pair from its first file): the encoder found
    by the suffix, the same 16 greedy tokens as ORT on them, every position's logits within the
    bounds. Whisper's q8 encoder runs its convolutions as ConvInteger."""
    from converter.verification.seq2seq import verify_seq2seq

    loop = converter.load_seq2seq(ROOT / arch / f"{stem}_{suffix}.onnx")
    assert loop.seq2seq.encoder.name == f"encoder_model_{suffix}.onnx"
    report = verify_seq2seq(loop, encoder_input(arch), prompt=loop.start_tokens, steps=NEW)
    assert report.passed, report.to_json()
    assert report.graph_tokens == report.source_tokens and len(report.positions) == NEW
    # a sequence, not one token repeated; but the tiny random BART's q4 repeats one token
    # on every text tried (its logits are still compared at each position)
    assert len(set(report.source_tokens)) >= (1 if (arch, suffix) == ("bart", "q4") else 3)
    if suffix == "fp16":
        assert loop.last_graph.outputs["logits"].data_type == "float16"
    if arch == "whisper" and suffix == "quantized":
        import onnx
        encoder = onnx.load(ROOT / arch / "encoder_model_quantized.onnx")
        assert [n.op_type for n in encoder.graph.node].count("ConvInteger") == 2


def test_whispers_prompt_of_several_tokens_is_its_first_step():
    """Whisper starts from several forced tokens (start, language, task): one first step
    through the no-cache branch, a logits row for each."""
    source = ROOT / "whisper" / "decoder_model_merged.onnx"
    loop = converter.load_seq2seq(source)
    loop.encode({"input_features": features()})
    got = converter.generate(loop, [1, 5, 9], 6)
    want = generate_seq2seq_on_onnxruntime(source, {"input_features": features()}, [1, 5, 9], 6)
    assert got.tokens == want.tokens and len(got.logits) == 3 + 6 - 1
    np.testing.assert_allclose(np.stack(got.logits), np.stack(want.logits), atol=1e-4,
                               rtol=1e-3)
    assert loop.graph(0, 3).inputs["input_ids"].shape == (1, 3)


def test_a_target_fits_the_encoder_and_each_step_to_its_limits():
    """load_seq2seq(target=...) rewrites every graph it steps as `convert --target` does:
    BART q4's uint4 weights (which Chromium refuses) become a type chromium-litert takes, and
    the tokens stay ORT's on the source files."""
    source = ROOT / "bart" / "decoder_model_merged_q4.onnx"
    plain = converter.load_seq2seq(source)
    plain.encode({"input_ids": TEXT})
    converter.generate(plain, plain.start_tokens, 2)
    assert "uint4" in {c.data_type for c in plain.last_graph.constants.values()}
    loop = converter.load_seq2seq(source, target="chromium-litert")
    loop.encode({"input_ids": TEXT})
    got = converter.generate(loop, loop.start_tokens, 4)
    for graph in (loop.encoder_graph, loop.graph(0, 1), loop.last_graph):
        assert "uint4" not in {c.data_type for c in graph.constants.values()}
    want = generate_seq2seq_on_onnxruntime(source, {"input_ids": TEXT}, loop.start_tokens, 4)
    assert got.tokens == want.tokens


def test_verify_steps_an_encoder_decoder_fitted_to_a_target():
    """--target fits each step's graph (and the encoder's) to the backend, as convert does."""
    r = CliRunner().invoke(main, ["verify", str(ROOT / "bart" / "decoder_model_merged_q4.onnx"),
                                  "--steps", "4", "--prompt", "5,9,14", "--target",
                                  "chromium-litert", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and report["graphTokens"] == report["sourceTokens"]
