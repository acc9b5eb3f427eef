"""Which inputs and outputs of a decoder export are its KV cache (state/kv_cache.py): the known
names, `--state` glob patterns, the cache's dimensions, and the refusals."""
from __future__ import annotations

from pathlib import Path

import pytest

import converter
from converter.errors import ConverterError
from converter.state.kv_cache import (declare_kv_state, match_pairs, parse_state_patterns,
                                      read_decoder_spec)

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "tiny-llama"
GENAI_IN = ["input_ids", "attention_mask", "past_key_values.0.key", "past_key_values.1.key",
            "past_key_values.0.value", "past_key_values.1.value"]
GENAI_OUT = ["logits", "present.0.key", "present.1.key", "present.0.value", "present.1.value"]


def test_the_builders_names_pair_by_default():
    assert match_pairs(GENAI_IN, GENAI_OUT) == [
        ("past_key_values.0.key", "present.0.key"), ("past_key_values.1.key", "present.1.key"),
        ("past_key_values.0.value", "present.0.value"),
        ("past_key_values.1.value", "present.1.value")]


def test_state_patterns_name_other_schemes():
    inputs = ["ids", "cache_in_3_k", "cache_in_3_v", "cache_in_12_k", "other"]
    outputs = ["logits", "cache_out_3_k", "cache_out_3_v", "cache_out_12_k"]
    patterns = parse_state_patterns(["cache_in_*_*=cache_out_*_*"])
    assert match_pairs(inputs, outputs, patterns) == [
        ("cache_in_3_k", "cache_out_3_k"), ("cache_in_3_v", "cache_out_3_v"),
        ("cache_in_12_k", "cache_out_12_k")]
    # the default names do not apply once patterns are given
    assert match_pairs(GENAI_IN, GENAI_OUT, parse_state_patterns(["past_key_values.0.*="
                                                                  "present.0.*"])) == [
        ("past_key_values.0.key", "present.0.key"),
        ("past_key_values.0.value", "present.0.value")]


@pytest.mark.parametrize("text, words", [
    ("past.*", "PAST=PRESENT"),
    ("past.*=present", "same number of '*'"),
    ("past.?=present.?", "same number of '*'"),
])
def test_malformed_patterns_are_refused(text, words):
    with pytest.raises(ConverterError, match=words.replace("*", r"\*")):
        parse_state_patterns([text])


def test_a_pattern_without_a_match_or_an_output_is_refused():
    with pytest.raises(ConverterError, match="matches no input"):
        match_pairs(GENAI_IN, GENAI_OUT, parse_state_patterns(["kv.*=kv_out.*"]))
    with pytest.raises(ConverterError, match="has no output 'present.0.key'"):
        match_pairs(GENAI_IN, GENAI_OUT[:1])


def test_the_fixtures_decoder_spec():
    spec = read_decoder_spec(FIXTURES / "fp32" / "model.onnx")
    assert (spec.input_ids, spec.attention_mask, spec.position_ids) == \
        ("input_ids", "attention_mask", None)
    assert len(spec.pairs) == 4
    assert (spec.batch_dim, spec.new_dim, spec.past_dim, spec.total_dim) == \
        ("batch_size", "sequence_length", "past_sequence_length", "total_sequence_length")
    assert spec.fixed == {"kv_cache_dim": 16}  # genai_config.json's head_size
    assert spec.dims(past=0, capacity=24) == {
        "kv_cache_dim": 16, "batch_size": 1, "sequence_length": 1,
        "past_sequence_length": 24, "total_sequence_length": 24}
    assert spec.dims(past=5, step=2)["total_sequence_length"] == 7
    with pytest.raises(ConverterError, match="--cache-capacity 0"):
        spec.dims(past=0, capacity=0)


def test_the_fixed_capacity_form_is_state_of_one_shape():
    graph = converter.load_decoder(FIXTURES / "int4" / "model.onnx", capacity=24)
    assert [(v.input, v.output) for v in graph.state] == \
        read_decoder_spec(FIXTURES / "int4" / "model.onnx").pairs
    assert graph.inputs["past_key_values.0.key"].shape == (1, 2, 24, 16)
    assert graph.outputs["present.0.key"].shape == (1, 2, 24, 16)
    assert graph.inputs["attention_mask"].shape == (1, 24)


def test_the_concat_form_is_refused_as_state():
    path = FIXTURES / "fp32" / "model.onnx"
    spec = read_decoder_spec(path)
    graph = converter.load(path, dims=spec.dims(past=3, step=1))
    assert graph.outputs["present.0.key"].shape == (1, 2, 4, 16)
    with pytest.raises(ConverterError, match="concat form"):
        declare_kv_state(graph, spec.pairs)
    assert graph.state == []


def test_genai_config_is_read_as_hostile_input(tmp_path):
    """The head size comes from genai_config.json beside the model: a regular file with an
    integer size in range, else the open dimension is named with the --dim that sets it."""
    import json
    import shutil

    for name in ("model.onnx", "model.onnx.data"):
        shutil.copyfile(FIXTURES / "fp32" / name, tmp_path / name)
    model = tmp_path / "model.onnx"
    with pytest.raises(ConverterError, match="kv_cache_dim.*is open.*--dim kv_cache_dim="):
        read_decoder_spec(model)  # no config
    outside = tmp_path.parent / f"{tmp_path.name}-config.json"
    shutil.copyfile(FIXTURES / "fp32" / "genai_config.json", outside)
    (tmp_path / "genai_config.json").symlink_to(outside)
    with pytest.raises(ConverterError, match="is open"):
        read_decoder_spec(model)  # a link is not followed out of the folder
    (tmp_path / "genai_config.json").unlink()
    for head in ("16", 1 << 20, -4, None):
        (tmp_path / "genai_config.json").write_text(
            json.dumps({"model": {"decoder": {"head_size": head}}}))
        with pytest.raises(ConverterError, match="head_size"):
            read_decoder_spec(model)
    assert read_decoder_spec(model, dims={"kv_cache_dim": 16}).fixed == {"kv_cache_dim": 16}
