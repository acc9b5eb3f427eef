"""`run --steps N --runtime chromium` and `verify --steps N --runtime chromium`: a TFLite
resource variable carried in Chromium's WebNN (the module's createSession, state on the context),
checked against the running sum in numpy and against LiteRT keeping its own variable; and the
tiny int4 Llama decoded greedily in Chromium (`--cache-capacity`, `--prompt`) against ONNX
Runtime on the source."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from cli.main import main
from converter.testing import decoding
from tests.cli.test_steps import _accumulator_tflite


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_run_steps_in_chromium_stacks_each_output(browser_limits, tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.ones((1, 3), np.float32))
    xs = np.arange(15, dtype=np.float32).reshape(5, 1, 3) / 8
    np.save(tmp_path / "x.npy", xs)
    r = run("run", model, "--steps", 5, "--runtime", "chromium", "--input",
            f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    out = np.load(tmp_path / "out" / "out.npy")
    assert out.shape == (5, 1, 3)
    np.testing.assert_allclose(out, 1 + np.cumsum(xs, axis=0), rtol=1e-6)


def test_verify_steps_in_chromium_against_litert(browser_limits, tmp_path):
    model = _accumulator_tflite(tmp_path / "acc.tflite", np.full((1, 3), 0.25, np.float32))
    r = run("verify", model, "--steps", 20, "--runtime", "chromium", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["stepCount"] == 20 and report["passed"] and len(report["steps"]) == 20
    assert report["sourceRuntime"] == "litert" and report["graphRuntime"] == "chromium"
    assert report["summary"]["out"]["elements"] == 60
    assert report["summary"]["out"]["maxAbs"] <= 1e-5


@pytest.mark.skipif(not decoding.source("int4").exists(), reason="models/tiny-llama/ is not here")
def test_verify_and_run_decode_the_int4_llama_in_chromium(browser_limits, tmp_path):
    source = decoding.source("int4")
    common = ["--cache-capacity", 40, "--target", "chromium-litert", "--runtime", "chromium",
              "--prompt", "1,17,42,99"]
    r = run("verify", source, "--steps", 32, "--json", *common)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["graphRuntime"] == "chromium" and report["sourceRuntime"] == "onnxruntime"
    assert report["passed"] and len(report["graphTokens"]) == 32
    assert report["graphTokens"] == report["sourceTokens"]
    assert len(report["positions"]) == 35  # 4 prompt positions, then 31 fed tokens
    r = run("run", source, "--steps", 8, "--output-dir", tmp_path / "out", *common)
    assert r.exit_code == 0, r.output
    tokens = np.load(tmp_path / "out" / "tokens.npy")
    assert tokens.tolist() == report["sourceTokens"][:8]
    assert np.load(tmp_path / "out" / "logits.npy").shape == (11, 256)


@pytest.mark.skipif(not decoding.source("fp32").exists(), reason="models/tiny-llama/ is not here")
def test_the_concat_form_is_refused_in_chromium_saying_what_to_give(tmp_path):
    source = decoding.source("fp32")
    for command in (["verify", source], ["run", source, "--output-dir", tmp_path / "out"]):
        r = run(*command, "--steps", 4, "--prompt", "1,17", "--runtime", "chromium")
        assert r.exit_code == 2, r.output
        assert "--cache-capacity N" in r.output.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not decoding.source("int4").exists(), reason="models/tiny-llama/ is not here")
def test_the_int4_llama_at_accuracy_level_4_decodes_in_chromium(browser_limits, tmp_path):
    """onnxruntime-genai's CPU default (MatMulNBits accuracy_level 4: ORT quantizes the
    activations to int8): the browser computes the model's float math, judged against ORT at
    accuracy_level 0, and the report says so and what ORT at level 4 chooses."""
    from tests.verification.test_dtype_forms import _int4_decoder_at_level_4

    source = _int4_decoder_at_level_4()  # genai_config.json beside it gives the head size
    r = run("verify", source, "--steps", 16, "--json", "--cache-capacity", 24, "--target",
            "chromium-litert", "--runtime", "chromium", "--prompt", "1,17,42,99")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["graphRuntime"] == "chromium" and report["passed"], report
    assert report["sourceRuntime"] == "onnxruntime (MatMulNBits at accuracy_level 0)"
    assert report["graphTokens"] == report["sourceTokens"] and len(report["graphTokens"]) == 16
    assert any("accuracy_level 4 ORT chooses" in note for note in report["notes"])
