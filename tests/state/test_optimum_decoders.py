"""Optimum's decoders stepped end to end on ONNX Runtime: the merged decoder_model_merged.onnx
(If on use_cache_branch), the unmerged pair decoder_model.onnx + decoder_with_past_model.onnx,
and optimum 2.x's single model.onnx (its mask axis named `past_sequence_length +
sequence_length`), each in the concat form (a graph per length, the first step through the
no-cache graph or branch) and the fixed-capacity form (one graph, a sliding window of N-1 past
rows), against ONNX Runtime on the source. Fixtures: models/optimum-tiny/ (a random 2-layer
Llama written by optimum's exporter, models/make_optimum_decoders.py)."""
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
from converter.state.generation import generate_on_onnxruntime
from converter.state.concat_form import ConcatLoop

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "optimum-tiny" / "llama"
FORMS = {"merged": "decoder_model_merged.onnx", "pair": "decoder_model.onnx",
         "with-past": "decoder_with_past_model.onnx", "single": "model.onnx"}
GPT2 = FIXTURES.parent / "gpt2" / "decoder_model_merged.onnx"
PROMPT = [1, 5, 9]
NEW = 16


def _close(got, want):
    got, want = np.stack(got), np.stack(want)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= 1e-4 + 1e-3 * np.abs(want))


def _plain_ort_tokens(steps: int) -> list[int]:
    """Greedy tokens written out by hand on ONNX Runtime with the single model.onnx: an
    empty past first, then each step's presents (what optimum's runtime does)."""
    session = ort.InferenceSession(str(FIXTURES / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    past = {f"past_key_values.{i}.{kv}": np.zeros((1, 2, 0, 8), np.float32)
            for i in range(2) for kv in ("key", "value")}
    tokens, new, fed = [], PROMPT, 0
    names = [o.name for o in session.get_outputs()]
    while len(tokens) < steps:
        out = dict(zip(names, session.run(None, {
            "input_ids": np.array([new], np.int64),
            "attention_mask": np.ones((1, fed + len(new)), np.int64),
            "position_ids": np.arange(fed, fed + len(new), dtype=np.int64)[None], **past})))
        fed += len(new)
        past = {k: out[k.replace("past_key_values", "present")] for k in past}
        tokens.append(int(np.argmax(out["logits"][0, -1])))
        new = [tokens[-1]]
    return tokens


@pytest.fixture(scope="module")
def expected():
    tokens = _plain_ort_tokens(NEW)
    assert len(set(tokens)) >= 6  # a sequence, not one token repeated
    return tokens


@pytest.mark.parametrize("form", ["merged", "pair"])
def test_the_source_reference_steps_every_form(form, expected):
    """generate_on_onnxruntime feeds each form what optimum does (the merged decoder its
    branch, the pair its first file): all give the tokens of the hand-written loop."""
    assert generate_on_onnxruntime(FIXTURES / FORMS[form], PROMPT, NEW).tokens == expected


@pytest.mark.parametrize("form", list(FORMS))
def test_the_concat_form_decodes_16_tokens_as_onnx_runtime(form, expected):
    loop = ConcatLoop(FIXTURES / FORMS[form], max_graphs=2)
    got = converter.generate(loop, PROMPT, NEW)
    assert got.tokens == expected
    _close(got.logits, generate_on_onnxruntime(FIXTURES / FORMS[form], PROMPT, NEW).logits)
    assert loop.conversions == NEW
    first = loop.graph(0, len(PROMPT))  # no past inputs: not fed, nothing of zero size
    assert not any(name.startswith("past_key_values") for name in first.inputs)
    assert "use_cache_branch" not in first.inputs and "use_cache_branch" not in \
        loop.last_graph.inputs
    assert loop.last_graph.inputs["past_key_values.0.key"].shape == (1, 2, 3 + NEW - 2, 8)
    assert loop.last_graph.inputs["attention_mask"].shape == (1, 3 + NEW - 1)


@pytest.mark.parametrize("form", ["merged", "pair", "single"])
def test_a_fixed_capacity_window_decodes_16_tokens_as_onnx_runtime(form, expected):
    graph = converter.load_decoder(FIXTURES / FORMS[form], capacity=20)
    assert graph.inputs["past_key_values.0.key"].shape == (1, 2, 19, 8)
    assert graph.outputs["present.0.key"].shape == (1, 2, 19, 8)  # the next past: a state
    assert graph.inputs["attention_mask"].shape == (1, 20)
    assert {v.input for v in graph.state} == {f"past_key_values.{i}.{kv}" for i in range(2)
                                              for kv in ("key", "value")}
    got = converter.generate(graph, PROMPT, NEW)
    assert got.tokens == expected
    _close(got.logits, generate_on_onnxruntime(FIXTURES / FORMS["single"], PROMPT, NEW).logits)


def test_a_window_holds_capacity_tokens_and_says_so_past_them():
    graph = converter.load_decoder(FIXTURES / FORMS["merged"], capacity=4)
    with pytest.raises(ConverterError, match="the cache holds 4 tokens; token 5 does not fit"):
        converter.generate(graph, PROMPT, 3)
    with pytest.raises(ConverterError, match="--cache-capacity 1: a sliding cache keeps N-1"):
        converter.load_decoder(FIXTURES / FORMS["merged"], capacity=1)


@pytest.mark.parametrize("form", ["merged", "pair", "single", "gpt2-merged"])
@pytest.mark.parametrize("route", ["concat", "capacity"])
def test_verify_steps_16_tokens_on_both_routes(form, route):
    path = GPT2 if form == "gpt2-merged" else FIXTURES / FORMS[form]
    args = ["verify", str(path), "--steps", str(NEW), "--prompt",
            ",".join(map(str, PROMPT)), "--json"]
    if route == "capacity":
        args += ["--cache-capacity", "24"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and report["graphTokens"] == report["sourceTokens"]
    assert len(report["graphTokens"]) == NEW and len(report["positions"]) == len(PROMPT) + NEW - 1


@pytest.mark.parametrize("form", ["merged", "pair", "single"])
@pytest.mark.parametrize("route", ["concat", "capacity"])
def test_run_steps_writes_the_tokens(tmp_path, route, form, expected):
    args = ["run", str(FIXTURES / FORMS[form]), "--steps", "6", "--prompt", "1,5,9",
            "--output-dir", str(tmp_path)]
    if route == "capacity":
        args += ["--cache-capacity", "12"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert np.load(tmp_path / "tokens.npy").tolist() == expected[:6]
    assert np.load(tmp_path / "logits.npy").shape == (3 + 6 - 1, 96)


def test_a_pair_without_its_with_past_file_is_one_line(tmp_path):
    shutil.copyfile(FIXTURES / "decoder_model.onnx", tmp_path / "decoder_model.onnx")
    r = CliRunner().invoke(main, ["verify", str(tmp_path / "decoder_model.onnx"), "--steps",
                                  "2", "--prompt", "1,5"])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "Traceback" not in r.output
    assert "decoder_model.onnx has no past inputs: its later steps are " \
           "decoder_with_past_model.onnx, which is not beside it" in r.output


def test_a_decoder_model_file_with_past_inputs_and_no_pair_is_a_single_form(tmp_path, expected):
    """The name alone makes no pair: a decoder_model.onnx that reads a past, with nothing
    beside it, is stepped as the single form."""
    shutil.copyfile(FIXTURES / "model.onnx", tmp_path / "decoder_model.onnx")
    loop = ConcatLoop(tmp_path / "decoder_model.onnx")
    assert loop.spec.first_path is None
    assert converter.generate(loop, PROMPT, 3).tokens == expected[:3]


def test_a_first_step_with_an_empty_past_converts_and_verifies(tmp_path):
    """--dim past_sequence_length=0: the past inputs have no elements, so they are constants
    (a Shape of one is known, a Concat drops it); the mask's axis, named by the expression,
    is computed; verify feeds the source the empty pasts."""
    source = FIXTURES / "model.onnx"
    dims = ["--dim", "batch_size=1", "--dim", "sequence_length=3", "--dim",
            "past_sequence_length=0"]
    r = CliRunner().invoke(main, ["convert", str(source), *dims, "-o",
                                  str(tmp_path / "first.webnn")])
    assert r.exit_code == 0, r.output
    graph = converter.load(tmp_path / "first.webnn")
    assert {n: list(v.shape) for n, v in graph.inputs.items()} == {
        "input_ids": [1, 3], "attention_mask": [1, 3], "position_ids": [1, 3]}
    r = CliRunner().invoke(main, ["verify", str(source), *dims, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["passed"]


def test_a_dim_named_by_an_expression_is_computed():
    graph = converter.convert(FIXTURES / "model.onnx", dims={
        "batch_size": 1, "sequence_length": 2, "past_sequence_length": 5})
    assert graph.inputs["attention_mask"].shape == (1, 7)
    assert graph.outputs["present.1.value"].shape == (1, 2, 7, 8)


def test_a_merged_decoder_without_its_branch_names_the_condition(tmp_path):
    """Converted at a past's shapes with use_cache_branch open, the no-cache branch cannot
    take them: the refusal names the condition and the decoder commands, not a broken model."""
    r = CliRunner().invoke(main, ["convert", str(FIXTURES / FORMS["merged"]), "--dim",
                                  "batch_size=1", "--dim", "sequence_length=1", "--dim",
                                  "past_sequence_length=4", "-o", str(tmp_path / "m.webnn")])
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "breaks an ONNX rule" not in r.output
    assert "its condition is computed at run time" in r.output
    assert "--const use_cache_branch=VALUE, or step the decoder: run/verify --steps N " \
           "--prompt IDS" in r.output
    assert not (tmp_path / "m.webnn").exists()


def test_a_present_that_does_not_grow_is_refused_a_window(tmp_path):
    """A hostile decoder: its pair is named like a cache, position_ids is an input, but the
    present is the past unchanged; the window form would carry a wrong state: refused."""
    from onnx import TensorProto, helper

    F, I = TensorProto.FLOAT, TensorProto.INT64
    inputs = [helper.make_tensor_value_info("input_ids", I, [1, "s"]),
              helper.make_tensor_value_info("attention_mask", I, [1, "t"]),
              helper.make_tensor_value_info("position_ids", I, [1, "s"]),
              helper.make_tensor_value_info("past_key_values.0.key", F, [1, 1, "p", 2])]
    outputs = [helper.make_tensor_value_info("logits", F, [1, "s", 2]),
               helper.make_tensor_value_info("present.0.key", F, [1, 1, "t", 2])]
    nodes = [helper.make_node("Identity", ["past_key_values.0.key"], ["present.0.key"]),
             helper.make_node("Cast", ["input_ids"], ["f"], to=F),
             helper.make_node("Unsqueeze", ["f", "axis"], ["u"]),
             helper.make_node("Concat", ["u", "u"], ["logits"], axis=2)]
    axis = helper.make_tensor("axis", I, [1], [2])
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, [axis]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(ConverterError, match=r"'present.0.key' has shape \[1, 1, 7, 2\] where a "
                                             r"past of 7 rows and one new token make 8 rows"):
        converter.load_decoder(path, capacity=8)


def test_inspect_asks_for_the_dims_and_not_for_their_sum():
    r = CliRunner().invoke(main, ["inspect", str(FIXTURES / "model.onnx")])
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]
    assert "open dims batch_size, past_sequence_length, sequence_length;" in first
    assert "--dim past_sequence_length + sequence_length" not in r.output


def test_a_zero_dim_that_empties_every_input_is_one_line(tmp_path):
    model = Path(__file__).resolve().parents[2] / "models" / "dynamic" / "bert_legacy.onnx"
    r = CliRunner().invoke(main, ["convert", str(model), "--dim", "batch=0", "--dim",
                                  "sequence=4", "-o", str(tmp_path / "b.webnn")])
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "--dim batch=0 leaves no input any elements; 0 is for a dim only some inputs " \
           "carry" in r.output
    assert not (tmp_path / "b.webnn").exists()
