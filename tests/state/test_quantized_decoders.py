"""transformers.js's quantized decoders stepped end to end: the tiny optimum Llama's merged
decoder, unmerged pair and optimum 2.x's single `model.onnx` (its first step a past of length
0) as q8 (`*_quantized.onnx`: quantize_dynamic, DynamicQuantizeLinear +
MatMulInteger), q4 (`*_q4.onnx`: MatMulNBits, block 32) and fp16 (`*_fp16.onnx`: float16
throughout, the past and the logits too), in the concat form and the
fixed-capacity window, against ONNX Runtime on the source. Fixtures: models/optimum-tiny/llama/
(models/make_quantized_decoders.py derives them from the float files)."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.runtimes.source_runs import dynamic_quantize_nodes, int8_activation_nodes
from converter.state.concat_form import ConcatLoop
from converter.state.generation import generate_on_onnxruntime

ROOT = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny"
LLAMA = ROOT / "llama"
# the file each form is given by: the merged decoder, the pair's first file (its
# decoder_with_past_model twin, of the same suffix, is found beside it), or the single form
FORMS = {f"{form}-{kind}": f"{stem}_{suffix}.onnx"
         for form, stem in (("merged", "decoder_model_merged"), ("pair", "decoder_model"),
                            ("single", "model"))
         for kind, suffix in (("q8", "quantized"), ("q4", "q4"), ("fp16", "fp16"))}
FILES = [f"{stem}_{suffix}.onnx"
         for stem in ("decoder_model_merged", "decoder_model", "decoder_with_past_model",
                      "model")
         for suffix in ("quantized", "q4", "fp16")]
PROMPT = [1, 5, 9]
NEW = 8


def _close(got, want, *, fp16: bool = False):
    """Within float32's noise, or float16's (its 2**-11 steps, accumulated over the layers)."""
    got, want = np.stack(got).astype(np.float32), np.stack(want).astype(np.float32)
    assert got.shape == want.shape
    atol, rtol = (1e-2, 1e-2) if fp16 else (1e-4, 1e-3)
    assert np.all(np.abs(got - want) <= atol + rtol * np.abs(want))


def _ops(path: Path) -> set[str]:
    def walk(graph):
        for node in graph.node:
            yield node.op_type
            for attr in node.attribute:
                if attr.HasField("g"):
                    yield from walk(attr.g)
    return set(walk(onnx.load(path).graph))


@pytest.mark.parametrize("name", FILES)
def test_the_quantized_fixtures_are_small_recorded_and_quantized(name):
    """Fixture facts (they hold on any code): under 500 KB, the README's sha256, and every
    weight MatMul quantized, in the merged decoder's If branches too."""
    data = (LLAMA / name).read_bytes()
    assert len(data) < 500_000
    assert f"| llama/{name} | {len(data):,} | {hashlib.sha256(data).hexdigest()} |" in \
        (ROOT / "README.md").read_text("utf-8")
    ops = _ops(LLAMA / name)
    if "_q4" in name:
        assert "MatMulNBits" in ops
    elif "_fp16" in name:  # no float32 left: the inputs, outputs and weights are float16
        model = onnx.load(LLAMA / name)
        types = {v.type.tensor_type.elem_type for v in (*model.graph.input,
                                                        *model.graph.output)}
        assert onnx.TensorProto.FLOAT16 in types and onnx.TensorProto.FLOAT not in types
        assert onnx.TensorProto.FLOAT not in {t.data_type for t in model.graph.initializer}
    else:
        assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops


@pytest.mark.parametrize("route", ["concat", "capacity"])
@pytest.mark.parametrize("form", list(FORMS))
def test_verify_steps_each_quantized_form_on_both_routes(form, route):
    args = ["verify", str(LLAMA / FORMS[form]), "--steps", str(NEW), "--prompt",
            ",".join(map(str, PROMPT)), "--json"]
    if route == "capacity":
        args += ["--cache-capacity", "16"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"], [p for p in report["positions"] if not p["passed"]][:1]
    assert report["graphTokens"] == report["sourceTokens"]
    assert len(report["graphTokens"]) == NEW
    assert len(report["positions"]) == len(PROMPT) + NEW - 1
    assert len(set(report["sourceTokens"])) >= 4  # a sequence, not one token repeated
    dynamic = route == "capacity" and form.endswith("q8")
    assert report["sourceRuntime"] == ("onnxruntime (the prompt one token a step)" if dynamic
                                       else "onnxruntime")
    assert bool(report.get("notes")) == dynamic


@pytest.mark.parametrize("form", list(FORMS))
def test_the_concat_form_generates_as_onnx_runtime(form):
    path = LLAMA / FORMS[form]
    loop = ConcatLoop(path, max_graphs=2)
    got = converter.generate(loop, PROMPT, NEW)
    want = generate_on_onnxruntime(path, PROMPT, NEW)
    assert got.tokens == want.tokens
    _close(got.logits, want.logits, fp16=form.endswith("fp16"))
    # the first step: the pair's no-past file, the merged decoder's no-cache branch, or (the
    # single form, one file) the with-past graph at a past of length 0, its pasts not fed
    assert (loop.spec.first_path is None) == (not form.startswith("pair"))
    assert not any(name.startswith("past_key_values") for name in loop.graph(0, 3).inputs)


@pytest.mark.parametrize("form", list(FORMS))
def test_a_window_generates_as_onnx_runtime_fed_as_it_is(form):
    """The window takes the prompt one token a step; ORT fed so gives its logits to float32
    noise, q8 (a scale per tensor) as well as q4; fp16 to float16's."""
    path = LLAMA / FORMS[form]
    got = converter.generate(converter.load_decoder(path, capacity=16), PROMPT, NEW)
    want = generate_on_onnxruntime(path, PROMPT, NEW, prompt_in_one_step=False)
    assert got.tokens == want.tokens
    _close(got.logits, want.logits, fp16=form.endswith("fp16"))
    if form.endswith("q4"):  # MatMulNBits is row by row: the prompt in one step is the same
        _close(got.logits, generate_on_onnxruntime(path, PROMPT, NEW).logits)


@pytest.mark.parametrize("form", ["merged-q8", "pair-q8", "single-q8"])
def test_dynamic_quantization_makes_the_prompt_rows_depend_on_the_step(form):
    """Why the window's reference takes the prompt a token a step: quantize_dynamic's one
    scale per tensor gives the prompt's rows other numbers when three are computed at once
    (well past float32's bounds), while the float model does not care."""
    path = LLAMA / FORMS[form]
    apart = generate_on_onnxruntime(path, PROMPT, 1, prompt_in_one_step=False).logits
    together = generate_on_onnxruntime(path, PROMPT, 1).logits
    assert np.max(np.abs(np.stack(apart) - np.stack(together))) > 0.01
    plain = LLAMA / FORMS[form].replace("_quantized", "")
    _close(generate_on_onnxruntime(plain, PROMPT, 1, prompt_in_one_step=False).logits,
           generate_on_onnxruntime(plain, PROMPT, 1).logits)


def _int8_activations_in_branches(tmp_path: Path) -> Path:
    """The merged q4 with accuracy_level 4 (int8 activations, as genai's CPU models ask) on
    every MatMulNBits, all of which live in its If branches."""
    model = onnx.load(LLAMA / "decoder_model_merged_q4.onnx")
    for node in model.graph.node:
        for attr in node.attribute if node.op_type == "If" else ():
            for inner in attr.g.node:
                if inner.op_type == "MatMulNBits":
                    inner.attribute.append(onnx.helper.make_attribute("accuracy_level", 4))
    onnx.save(model, tmp_path / "decoder_model_merged_q4.onnx")
    return tmp_path / "decoder_model_merged_q4.onnx"


def test_quantized_nodes_are_counted_inside_if_branches(tmp_path):
    """The merged decoder's weight MatMuls live in its If branches: counted there."""
    assert dynamic_quantize_nodes(LLAMA / "decoder_model_merged_quantized.onnx") == 18
    assert dynamic_quantize_nodes(LLAMA / "decoder_model_quantized.onnx") == 9
    assert dynamic_quantize_nodes(LLAMA / "model_quantized.onnx") == 9
    assert dynamic_quantize_nodes(LLAMA / "decoder_model_merged.onnx") == 0
    assert int8_activation_nodes(_int8_activations_in_branches(tmp_path)) == 30
    assert int8_activation_nodes(LLAMA / "decoder_model_merged_q4.onnx") == 0


@pytest.mark.parametrize("route", ["concat", "capacity"])
def test_int8_activations_in_if_branches_are_judged_on_the_float_math(tmp_path, route):
    """ORT at accuracy_level 4 quantizes the activations (0.08 off the float math here);
    the branches' nodes are found, so the logits are compared with ORT at level 0."""
    args = ["verify", str(_int8_activations_in_branches(tmp_path)), "--steps", "8",
            "--prompt", "1,5,9", "--json"]
    if route == "capacity":
        args += ["--cache-capacity", "16"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and report["graphTokens"] == report["sourceTokens"]
    assert report["sourceRuntime"] == "onnxruntime (MatMulNBits at accuracy_level 0)"
    assert "quantizes the activations of 30 MatMulNBits nodes" in report["notes"][0]


def test_verify_text_says_what_the_q8_window_is_compared_with():
    r = CliRunner().invoke(main, ["verify", str(LLAMA / FORMS["pair-q8"]), "--steps", "4",
                                  "--prompt", "1,5,9", "--cache-capacity", "8"])
    assert r.exit_code == 0, r.output
    assert "webnn-onnx vs onnxruntime (the prompt one token a step)" in r.output
    assert re.search(r"note: 9 DynamicQuantizeLinear nodes quantize each tensor with one "
                     r"scale over all its rows, .* fed the whole prompt in one step ORT chooses "
                     r"(the same tokens|tokens \[)", r.output)
    assert r.output.rstrip().endswith("pass")


def test_a_q4_pair_without_its_with_past_twin_is_one_line(tmp_path):
    shutil.copyfile(LLAMA / "decoder_model_q4.onnx", tmp_path / "decoder_model_q4.onnx")
    r = CliRunner().invoke(main, ["verify", str(tmp_path / "decoder_model_q4.onnx"),
                                  "--steps", "2", "--prompt", "1,5"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "decoder_with_past_model_q4.onnx, which is not beside it" in r.output
