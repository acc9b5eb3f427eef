"""transformers.js's quantized encoder-decoders stepped in Chromium's WebNN through `verify
--steps 16 --runtime chromium`, judged as ONNX Runtime's test judges them
(tests/state/test_seq2seq.py): Whisper, T5 (its merged decoder and its unmerged pair), BART and
Marian, each as q8 (`_quantized`: DynamicQuantizeLinear + MatMulInteger; Whisper's encoder also
ConvInteger), q4 (`_q4`: MatMulNBits) and fp16 (float16 inside and at the boundary), the
encoder of the same suffix once and the decoder's concat form a step at a time in the browser:
16 greedy tokens equal to ORT's on the source files, every position's logits within the bounds
of the graph's logits (float16's for fp16). q8 and fp16 run under the browser's own limits; q4
takes `--target chromium-litert` (Chromium refuses uint4 constants, and says to add it).
Fixtures: models/optimum-tiny/{whisper,t5,bart,marian}/ (models/make_quantized_seq2seq.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cli.main import main

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"
SUFFIX = {"q8": "quantized", "q4": "q4", "fp16": "fp16"}
TEXT = [5, 9, 14, 20, 33]
NEW = 16
FORMS = [("whisper", "decoder_model_merged"), ("t5", "decoder_model_merged"),
         ("t5", "decoder_model"), ("bart", "decoder_model_merged"),
         ("marian", "decoder_model_merged")]


def _verify(tmp_path: Path, arch: str, stem: str, kind: str, *extra: str):
    """`verify DECODER --steps 16 --runtime chromium --json`: --prompt is the encoder's text
    (T5, BART, Marian) or the decoder's start token (Whisper, its features from --input)."""
    args = ["verify", str(ROOT / arch / f"{stem}_{SUFFIX[kind]}.onnx"), "--steps", str(NEW),
            "--runtime", "chromium", *extra]
    if arch == "whisper":
        features = np.random.default_rng(0).standard_normal((1, 8, 32)).astype(np.float32)
        np.save(tmp_path / "features.npy", features)
        args += ["--prompt", "1", "--input", f"input_features={tmp_path / 'features.npy'}"]
    else:
        args += ["--prompt", ",".join(map(str, TEXT))]
    return CliRunner().invoke(main, args)


@pytest.mark.parametrize("kind", ["q8", "q4", "fp16"])
@pytest.mark.parametrize("arch,stem", FORMS)
def test_each_quantized_seq2seq_form_generates_onnx_runtimes_16_tokens_in_chromium(
        browser_limits, tmp_path, arch, stem, kind):
    extra = ["--target", "chromium-litert"] if kind == "q4" else []
    r = _verify(tmp_path, arch, stem, kind, "--json", *extra)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["graphRuntime"] == "chromium"
    assert report["graphTokens"] == report["sourceTokens"] and len(report["graphTokens"]) == NEW
    # a sequence, not one token repeated; but the tiny random BART's q4 repeats one token
    # on every text tried (its logits are still compared at each position)
    assert len(set(report["sourceTokens"])) >= (1 if (arch, kind) == ("bart", "q4") else 3)
    assert report["passed"] and len(report["positions"]) == NEW
    assert all(p["passed"] for p in report["positions"])
    assert f"the encoder encoder_model_{SUFFIX[kind]}.onnx ran once on" in report["notes"][0]


def test_q4_without_the_target_says_to_add_it_in_one_line(browser_limits, tmp_path):
    """Chromium's WebNN refuses q4's uint4 constants; the message names the constant and the
    target that takes it, and nothing else."""
    r = _verify(tmp_path, "whisper", "decoder_model_merged", "q4")
    assert r.exit_code == 2, r.output
    assert "Unsupported data type uint4 for constant" in r.output
    assert "--target chromium-litert" in r.output
    assert r.output.count("\n") == 1 and "Traceback" not in r.output
