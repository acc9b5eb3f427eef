"""Manifests: JSON and TOML, the schema, and how models are located and keyed."""
from __future__ import annotations

import json

import pytest

from converter.errors import ConverterError, FormatError
from converter.zoo import load_manifest
from converter.zoo.store import ResultStore, result_key

from .conftest import ROOT


def test_public_manifest_validates_and_lists_26_models():
    manifest = load_manifest(ROOT / "models" / "zoo.json")
    assert len(manifest.entries) == 26
    by_id = {e.id: e for e in manifest.entries}
    mul = by_id["mul_1"]
    assert mul.format == "onnx" and mul.path is None
    assert mul.source["package"] == "onnxruntime" and mul.source["version"] == "1.31.1"
    assert mul.sha256 == "71f431c4e9321ec6fbeb158d02ed240459a7dcc98673fa79a4f439ce42efaf10"
    assert mul.content_id() == mul.sha256  # a package file is keyed without downloading it
    assert mul.input_shapes == {"X": [3, 2]}
    assert sum(e.expect == "unsupported" for e in manifest.entries) == 0  # wake words: state
    assert sum(e.format == "tflite" for e in manifest.entries) == 13


def test_toml_manifest_resolves_paths_relative_to_itself(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.onnx").write_bytes(b"abc")
    toml = tmp_path / "zoo.toml"
    toml.write_text('[[models]]\nid = "m"\npath = "sub/m.onnx"\nexpect = "error"\n'
                    'inputShapes = { x = [1, 3] }\ndims = { batch = 2 }\n'
                    'tolerances = { atol = 0.001 }\n')
    entry = load_manifest(toml).entries[0]
    assert entry.path == (tmp_path / "sub" / "m.onnx").resolve()
    assert entry.input_shapes == {"x": [1, 3]} and entry.dims == {"batch": 2}
    assert entry.tolerances == {"atol": 0.001} and entry.expect == "error"
    # a local file is keyed by its identity and change time, not read (the job hashes it)
    first = entry.content_id()
    assert first.startswith("file-") and first == entry.content_id()
    (tmp_path / "sub" / "m.onnx").write_bytes(b"abcd")  # a write changes its size or times
    assert entry.content_id() != first


def test_model_with_both_path_and_source_is_refused_with_its_json_path(tmp_path):
    bad = tmp_path / "zoo.json"
    bad.write_text(json.dumps({"models": [{"id": "a", "path": "a.onnx", "source": {
        "package": "p", "version": "1", "path": "a.onnx", "sha256": "0" * 64}}]}))
    with pytest.raises(FormatError) as info:
        load_manifest(bad)
    assert "$.models[0]" in info.value.line() and "zoo-manifest" in info.value.line()


def test_duplicate_ids_and_unknown_only_are_refused(tmp_path):
    dup = tmp_path / "zoo.json"
    dup.write_text(json.dumps({"models": [{"id": "a", "path": "a.onnx"},
                                          {"id": "a", "path": "b.onnx"}]}))
    with pytest.raises(FormatError, match=r"\$.models\[1\].id: 'a' appears twice"):
        load_manifest(dup)
    with pytest.raises(ConverterError, match="no model with id 'nope'"):
        load_manifest(ROOT / "models" / "zoo.json").select(["nope"])


def test_result_key_changes_with_options_not_with_expectation():
    spec = {"format": "onnx", "inputShapes": {}, "dims": {}, "constInputs": {},
            "tolerances": {}, "seed": 0, "expect": "verified", "id": "a"}
    base = result_key("f" * 64, "0.1.0", spec, [], ["ort"])
    assert base.startswith("f" * 64 + ":0.1.0:")
    assert result_key("f" * 64, "0.1.0", {**spec, "expect": "error", "id": "b"}, [],
                      ["ort"]) == base
    assert result_key("f" * 64, "0.1.0", {**spec, "seed": 1}, [], ["ort"]) != base
    assert result_key("f" * 64, "0.1.0", spec, ["coreml"], ["ort"]) != base
    assert result_key("f" * 64, "0.2.0", spec, [], ["ort"]) != base


def test_store_ignores_a_line_cut_by_a_kill_and_keeps_appending(tmp_path):
    path = tmp_path / "r.jsonl"
    store = ResultStore(path, resume=False)
    store.append("k1", {"status": "verified"})
    with open(path, "a") as f:
        f.write('{"key": "k2", "result": {"sta')  # the run was killed mid-line
    again = ResultStore(path, resume=True)
    assert len(again) == 1 and again.get("k1") == {"status": "verified"}
    again.append("k3", {"status": "error"})
    assert len(ResultStore(path, resume=True)) == 2
    assert len(path.read_text().splitlines()) == 3
    assert len(ResultStore(path, resume=False)) == 0 and path.read_text() == ""
