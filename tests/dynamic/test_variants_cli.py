"""`--dim NAME=V1,V2` / `NAME=LO..HI` on the command line, and variants files that lie."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.conversion.variants import convert_variants
from converter.errors import FormatError

from .tiny_bert import build


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build(tmp_path_factory.mktemp("variants_cli") / "bert.onnx")


def test_convert_with_a_list_verifies_every_value_then_writes_one_file(bert, tmp_path):
    out = tmp_path / "bert.webnn"
    r = run("convert", bert, "-o", out, "--dim", "sequence=8,16,32", "--verify", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and [v["at"] for v in report["variants"]] == [
        {"sequence": 8}, {"sequence": 16}, {"sequence": 32}]
    for v in report["variants"]:  # judged against ONNX Runtime on the source at each value
        assert v["report"]["passed"]
        assert v["report"]["outputs"][0]["shape"] == [1, v["at"]["sequence"], 16]
    assert [p.name for p in sorted(tmp_path.iterdir())] == [
        "bert.manifest.json", "bert.webnn", "bert.weights"]
    r = run("verify", bert, "--graph", out, "--dim", "sequence=16", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["outputs"][0]["shape"] == [1, 16, 16]
    r = run("verify", bert, "--graph", out, "--dim", "sequence=24", "--json")  # never converted
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["outputs"][0]["shape"] == [1, 24, 16]
    r = run("verify", bert, "--graph", out)
    assert r.exit_code == 2 and "several values of sequence" in r.output  # bad input
    r = run("inspect", out, "--dim", "sequence=32", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["inputs"]["input_ids"]["shape"] == [1, 32]


def test_convert_with_a_range_writes_a_module_taking_the_dims(bert, tmp_path):
    r = run("convert", bert, "-o", tmp_path / "bert.js", "--dim", "sequence=8..32")
    assert r.exit_code == 0, r.output
    assert "3 variants: sequence=8; sequence=20; sequence=32" in r.output
    assert "one builder for sequence in 8..32" in r.output
    assert 'export const DIMS = {"sequence": {min: 8, max: 32}};' in \
        (tmp_path / "bert.js").read_text()


@pytest.mark.parametrize("args, message", [
    (["convert", "-o", "{tmp}/x.onnx", "--dim", "sequence=8,16"], "holds one graph"),
    (["convert", "-o", "{tmp}/x.tflite", "--dim", "sequence=8..16"], "holds one graph"),
    (["verify", "--dim", "sequence=8,16"], "verify takes one value of a dim"),
    (["run", "--dim", "sequence=8..16", "--output-dir", "{tmp}"], "run takes one value"),
    (["convert", "-o", "{tmp}/x.webnn", "--dim", "sequence=16..8"], "NAME=LO..HI"),
    (["convert", "-o", "{tmp}/x.webnn", "--dim", "sequence=8,,16"], "NAME=V1,V2"),
    (["convert", "-o", "{tmp}/x.webnn", "--dim", "sequence=0,16"], "NAME=V1,V2")])
def test_bad_uses_fail_in_one_line_leaving_nothing(bert, tmp_path, args, message):
    folder = tmp_path / "out"
    folder.mkdir()
    r = run(args[0], bert, *[a.replace("{tmp}", str(folder)) for a in args[1:]])
    assert r.exit_code != 0 and message in r.output, r.output
    assert "Traceback" not in r.output
    assert list(folder.iterdir()) == []


# -- files that lie -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("variants_files")
    variants = convert_variants(bert, {"sequence": [8, 16]})
    converter.save(variants, folder / "b.json")
    converter.save(variants, folder / "b.webnn")
    return folder


def _rewrite_json(saved, tmp_path, change):
    obj = json.loads((saved / "b.json").read_text())
    change(obj["variants"])
    for name in ("manifest.json", "weights"):
        (tmp_path / f"b.{name}").write_bytes((saved / f"b.{name}").read_bytes())
    (tmp_path / "b.json").write_text(json.dumps(obj))
    return tmp_path / "b.json"


def _entry(i, key, value):
    return lambda v: v["entries"][i].__setitem__(key, value)


@pytest.mark.parametrize("change, message", [
    (_entry(1, "at", {"sequence": 8}), "two entries at sequence=8"),
    (_entry(1, "at", {"batch": 8}), "not the dims"),
    (lambda v: v.__setitem__("ranges", {"sequence": [10, 16]}), "outside the range"),
    (lambda v: v.__setitem__("fixed", {"sequence": 3}), "both fixed and varying"),
    (lambda v: v["entries"][1].pop("graph"), "entry 1 has no graph"),
    (lambda v: v["entries"][1]["graph"].__setitem__("variants", {}), "variants of its own"),
    (lambda v: v["entries"][1]["graph"]["consts"]["wq"]["init"].__setitem__("ref", "../x"),
     "never a path"),
    (lambda v: v.__setitem__("entries", [v["entries"][0]] * 70), "more than the 64"),
    (lambda v: v.__setitem__("extra", 1), "extra"),
    (lambda v: v["entries"][0].__setitem__("graph", {}), "the file's own graph")])
def test_a_json_variants_record_that_lies_is_refused(saved, tmp_path, change, message):
    path = _rewrite_json(saved, tmp_path, change)
    with pytest.raises((FormatError, converter.WeightsError), match=message):
        converter.load(path)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("#@variants ", "#@variants [", 1), "variants record"),
    (lambda t: t.replace('"at": {"sequence": 8}', '"at": {"sequence": 16}'), "two entries"),
    (lambda t: t.replace("#@variant {", "#@varianz {"), "outside a variant"),
    (lambda t: t + "#@variants {}\n", "a second #@variants line"),
    (lambda t: t.replace("#| webnn_graph", "#| webnn_grph"), "variant sequence=16")])
def test_a_text_variants_record_that_lies_is_refused(saved, tmp_path, edit, message):
    for name in ("manifest.json", "weights"):
        (tmp_path / f"b.{name}").write_bytes((saved / f"b.{name}").read_bytes())
    (tmp_path / "b.webnn").write_text(edit((saved / "b.webnn").read_text()))
    with pytest.raises(converter.ConverterError, match=message):
        converter.load(tmp_path / "b.webnn")


def test_a_variants_file_converts_into_a_module_and_a_target(bert, tmp_path):
    r = run("convert", bert, "-o", tmp_path / "all.json", "--dim", "sequence=8,16,32")
    assert r.exit_code == 0, r.output
    # Read back, the variants are still one structure (the position rows are the largest
    # table and a slice in every variant): one builder, its expressions checked on 16.
    r = run("convert", tmp_path / "all.json", "-o", tmp_path / "module.js")
    assert r.exit_code == 0, r.output
    assert "one builder for sequence in 8..32" in r.output and "checked at sequence=16" in r.output
    r = run("convert", tmp_path / "all.json", "-o", tmp_path / "coreml.webnn", "-t", "coreml")
    assert r.exit_code == 0, r.output
    back = converter.load(tmp_path / "coreml.webnn")
    assert back.points == [{"sequence": 8}, {"sequence": 16}, {"sequence": 32}]
    assert all(not converter.check(g, "coreml") for _, g in back.entries)
    r = run("convert", tmp_path / "all.json", "-o", tmp_path / "again.js", "--verify")
    assert r.exit_code == 2 and "--verify needs the source model" in r.output
    r = run("convert", tmp_path / "all.json", "-o", tmp_path / "one.webnn", "--dim",
            "sequence=16")
    assert r.exit_code == 0 and "operations" in r.output, r.output
    assert converter.load(tmp_path / "one.webnn").inputs["input_ids"].shape == (1, 16)
