"""`convert DECODER.onnx -o NAME.js --steps N` on an encoder-decoder's decoder: what is
refused, in one line and with nothing written; the files written, the decoder module's
size, which does not grow with N, and --target's rewrites of every graph (a q4 export's uint4
weights, which Chromium refuses: a note says so when no target is given) (the browser side
is tests/browser/test_seq2seq_module_in_chromium.py and
tests/browser/test_quantized_decoders_in_chromium.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"
T5 = ROOT / "t5"


@pytest.mark.parametrize("extra,message", [
    (["--steps", "257"], "--steps 257 is out of range for an encoder-decoder's module; "
                         "give 1..256"),
    (["--steps", "4", "--target", "chromium-litert", "--io-layout", "nhwc"],
     "--io-layout does not apply to an encoder-decoder's .js module"),
    (["--steps", "4", "--target", "no-such-backend"], "no target named 'no-such-backend'"),
    (["--steps", "4", "--dim", "batch_size=1"], "takes one --dim, encoder_sequence_length=N"),
    (["--steps", "4", "--dim", "encoder_sequence_length=0"], "encoder length 0 is out of "
                                                             "range"),
    ([], "a page that generates needs the number of steps; give --steps N"),
])
def test_bad_requests_are_refused_in_one_line(tmp_path, extra, message):
    r = CliRunner().invoke(main, ["convert", str(T5 / "decoder_model_merged.onnx"), "-o",
                                  str(tmp_path / "t5.js"), *extra])
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Traceback" not in r.output
    errors = [line for line in r.output.splitlines() if "rror" in line]
    assert len(errors) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_module_files_are_written_and_name_each_other(tmp_path):
    r = CliRunner().invoke(main, ["convert", str(T5 / "decoder_model_merged.onnx"), "-o",
                                  str(tmp_path / "t5.js"), "--steps", "3"])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"t5.{part}" for part in [
        "js", "html", "encoder.js", "encoder.weights", "encoder.manifest.json", "decoder.js",
        "decoder.weights", "decoder.manifest.json"])
    driver = (tmp_path / "t5.js").read_text()
    assert 'import * as encoder from "./t5.encoder.js";' in driver
    assert '"maxSteps": 3' in driver and '"encoderLength": 32' in driver
    assert '"startTokens": [\n    0\n  ]' in driver
    assert 'WEIGHTS_FILE = "t5.decoder.weights"' in (tmp_path / "t5.decoder.js").read_text()
    # the encoder takes the prompt at its own length (a q8 encoder's scales are the prompt's)
    encoder = (tmp_path / "t5.encoder.js").read_text()
    assert 'export const DIMS = {"encoder_sequence_length": {min: 1, max: 32}};' in encoder
    assert '"encoderDim": "encoder_sequence_length"' in driver
    assert "note: encoder: one builder for encoder_sequence_length in 1..32" in r.output


@pytest.mark.parametrize("arch", ["bart", "t5", "whisper"])
def test_the_decoders_code_does_not_grow_with_the_steps(tmp_path, arch):
    """Two builders whatever --steps is: the first step's graph and one for every later past
    length (its shapes expressions of the length); what grows is a table of per-length keys
    (a position row folded per length), not a builder (about 44 KB each) per step."""
    sizes = {}
    for steps in (4, 12):
        out = tmp_path / str(steps)
        out.mkdir()
        args = ["convert", str(ROOT / arch / "decoder_model_merged.onnx"), "-o",
                str(out / "m.js"), "--steps", str(steps)]
        if arch != "whisper":
            args += ["--dim", "encoder_sequence_length=8"]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        assert (f"note: decoder: 2 builders for past_decoder_sequence_length in "
                f"0..{steps - 1}, one for each of 0; 1..{steps - 1}: the whole range is not "
                f"one graph (the model converted at past_decoder_sequence_length=1: ") in r.output
        module = (out / "m.decoder.js").read_text()
        assert re.findall(r"^async function (build\d+)\(", module, re.M) == ["build0", "build1"]
        sizes[steps] = len(module)
    assert sizes[12] - sizes[4] < 8 * 100, sizes


def _not_one_graph(variants, convert=None):
    from converter.dynamic.symbolic import StructureDiffers

    raise StructureDiffers("a stand-in difference", where="the encoder at 2")


def test_an_encoder_that_is_not_one_graph_gets_one_builder_per_length_and_says_why(
        tmp_path, monkeypatch):
    """(The tiny exports' encoders are one graph for every length: the fit is made to fail.)"""
    monkeypatch.setattr("converter.dynamic.symbolic.polymorphic", _not_one_graph)
    r = CliRunner().invoke(main, ["convert", str(T5 / "decoder_model_merged.onnx"), "-o",
                                  str(tmp_path / "t5.js"), "--steps", "2", "--dim",
                                  "encoder_sequence_length=3"])
    assert r.exit_code == 0, r.output
    assert ("note: encoder: one builder per value (encoder_sequence_length in 1, 2, 3): the "
            "encoder at 2: a stand-in difference") in r.output
    assert 'export const DIMS = {"encoder_sequence_length": {values: [1, 2, 3]}};' in \
        (tmp_path / "t5.encoder.js").read_text()
    (tmp_path / "long").mkdir()
    r = CliRunner().invoke(main, ["convert", str(T5 / "decoder_model_merged.onnx"), "-o",
                                  str(tmp_path / "long" / "t5.js"), "--steps", "2", "--dim",
                                  "encoder_sequence_length=300"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert list((tmp_path / "long").iterdir()) == []
    assert ("the encoder is not one graph for every prompt length (the encoder at 2: a "
            "stand-in difference), and one builder per length takes at most 256 lengths") \
        in r.output and "give --dim encoder_sequence_length=N, N <= 256" in r.output


SUFFIX = {"fp32": "", "fp16": "_fp16", "q8": "_quantized", "q4": "_q4"}
LIMITS_NOTE = "note: the page's graphs break the limits of Chromium's WebNN ("
ADVICE = ("so the browser refuses to build them: convert with --target chromium-litert "
          "(Python: target='chromium-litert'), whose passes fit them to those limits")


def _module(tmp_path: Path, arch: str, kind: str, *extra: str):
    """convert ARCH's merged decoder of KIND -o m.js --steps 2: the CLI's result and the
    data types of the constants both modules' manifests list."""
    args = ["convert", str(ROOT / arch / f"decoder_model_merged{SUFFIX[kind]}.onnx"), "-o",
            str(tmp_path / "m.js"), "--steps", "2", *extra]
    if arch != "whisper":
        args += ["--dim", "encoder_sequence_length=3"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    types = set()
    for part in ("encoder", "decoder"):
        manifest = json.loads((tmp_path / f"m.{part}.manifest.json").read_text())
        types |= {entry["dataType"] for entry in manifest["tensors"].values()}
    return r, types


@pytest.mark.parametrize("arch", ["bart", "t5", "marian", "whisper"])
def test_a_q4_module_is_rewritten_for_the_target(tmp_path, arch):
    """With --target chromium-litert every graph of the encoder's and decoder's modules is
    rewritten by its passes: no uint4 weight left (Chromium refuses them), and no note."""
    r, types = _module(tmp_path, arch, "q4", "--target", "chromium-litert")
    assert "uint4" not in types and LIMITS_NOTE not in r.output, r.output
    assert "(the encoder, and the decoder at 2 past length(s), rewritten for chromium-litert)" \
        in r.output


@pytest.mark.parametrize("kind", list(SUFFIX))
@pytest.mark.parametrize("arch", ["bart", "t5", "marian", "whisper"])
def test_a_note_says_to_add_the_target_exactly_where_the_browser_refuses_the_page(
        tmp_path, arch, kind):
    """Converted with no target, q4's modules keep uint4 weights, which Chromium's WebNN
    refuses to build: one note says so and what to add. The other forms' pages build as
    converted (tests/browser/test_seq2seq_module_in_chromium.py,
    test_quantized_decoders_in_chromium.py): no note."""
    r, types = _module(tmp_path, arch, kind)
    notes = [line for line in r.output.splitlines() if line.startswith(LIMITS_NOTE)]
    assert ("uint4" in types) is (kind == "q4")
    if kind != "q4":
        assert notes == [], r.output
        return
    assert len(notes) == 1 and "data type uint4" in notes[0] and notes[0].endswith(ADVICE), \
        r.output


def test_write_seq2seq_js_takes_the_target_in_python(tmp_path):
    """The Python API as the CLI: write_seq2seq_js(..., target=) rewrites both modules."""
    from converter.state.seq2seq_js import write_seq2seq_js

    written, notes = write_seq2seq_js(ROOT / "t5" / "decoder_model_merged_q4.onnx",
                                      tmp_path / "m.js", 2, encoder_length=3,
                                      target="chromium-litert")
    assert tmp_path / "m.decoder.weights" in written and len(notes) == 2, notes
    for part in ("encoder", "decoder"):
        manifest = json.loads((tmp_path / f"m.{part}.manifest.json").read_text())
        # the uint4 weights re-based to int4, which chromium-litert takes; nothing else
        assert {e["dataType"] for e in manifest["tensors"].values()} == {"float32", "int4"}
