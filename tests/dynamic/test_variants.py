"""Variants (issue 14 items 1 and 3): a model converted at several values of a dim, each
variant checked against ONNX Runtime on the source at the same dims; one .webnn/.json file with
one weights file no larger than 1.05x a single conversion's; what reads them back."""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.dynamic.variants import MAX_VARIANTS, Variants, range_values, split_dims
from converter.conversion.variants import convert_variants
from converter.errors import ConverterError
from converter.formats import load_graph, webnn_text

from .tiny_bert import VOCAB, build

SEQUENCES = [8, 16, 32]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build(tmp_path_factory.mktemp("variants") / "bert.onnx")


@pytest.fixture(scope="module")
def variants(bert):
    return convert_variants(bert, {"sequence": SEQUENCES})


def feeds_at(sequence: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((1, sequence), np.int64)
    mask[0, sequence // 2:] = rng.integers(0, 2, sequence - sequence // 2)
    return {"input_ids": rng.integers(0, VOCAB, (1, sequence)).astype(np.int64),
            "attention_mask": mask}


def source_at(model, feeds) -> np.ndarray:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def assert_matches_source(model, run, sequence: int) -> None:
    feeds = feeds_at(sequence)
    want = source_at(model, feeds)
    got = run(feeds)["last_hidden_state"]
    assert got.shape == want.shape == (1, sequence, 16)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3)  # tolerances.md, float32


def test_one_conversion_per_value_each_matching_the_source(bert, variants):
    assert variants.dims == ("sequence",)
    assert variants.points == [{"sequence": s} for s in SEQUENCES]
    for point, graph in variants.entries:
        assert graph.inputs["input_ids"].shape == (1, point["sequence"])
        assert_matches_source(bert, lambda f, point=point: converter.run(variants, f, dims=point),
                              point["sequence"])


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_the_file_holds_every_variant_with_weights_of_one_conversion(bert, variants, tmp_path,
                                                                     suffix):
    written = converter.save(variants, tmp_path / f"bert{suffix}")
    assert [p.name for p in written] == [f"bert{suffix}", "bert.manifest.json", "bert.weights"]
    converter.save(converter.load(bert, dims={"sequence": 32}), tmp_path / f"one{suffix}")
    size = (tmp_path / "bert.weights").stat().st_size
    single = (tmp_path / "one.weights").stat().st_size
    assert size <= 1.05 * single, (size, single)
    # Each distinct constant once: the manifest holds no two tensors with the same bytes.
    manifest = json.loads((tmp_path / "bert.manifest.json").read_text())["tensors"]
    raw = (tmp_path / "bert.weights").read_bytes()
    contents = [raw[t["byteOffset"]:t["byteOffset"] + t["byteLength"]] + t["dataType"].encode()
                + str(t["shape"]).encode() for t in manifest.values()]
    assert len(set(contents)) == len(contents)

    back = converter.load(tmp_path / f"bert{suffix}")
    assert isinstance(back, Variants) and back.points == variants.points
    for sequence in SEQUENCES:
        at = {"sequence": sequence}
        assert_matches_source(bert, lambda f, at=at: converter.run(back, f, dims=at), sequence)
        graph = converter.load(tmp_path / f"bert{suffix}", dims={"sequence": sequence})
        assert graph.inputs["attention_mask"].shape == (1, sequence)


def test_a_reader_without_the_feature_sees_the_first_variant(bert, variants, tmp_path):
    converter.save(variants, tmp_path / "b.json")
    obj = json.loads((tmp_path / "b.json").read_text())
    assert [e["at"] for e in obj["variants"]["entries"]] == variants.points
    del obj["variants"]  # what a reader that skips the member has
    (tmp_path / "plain.json").write_text(json.dumps(obj))
    for name in ("manifest.json", "weights"):
        (tmp_path / f"plain.{name}").write_bytes((tmp_path / f"b.{name}").read_bytes())
    plain = load_graph(tmp_path / "plain.json")
    assert_matches_source(bert, lambda f: converter.run(plain, f), 8)

    converter.save(variants, tmp_path / "t.webnn")
    text = (tmp_path / "t.webnn").read_text()
    doc = webnn_text.parse(text, "t.webnn")  # the text parser alone: comments are skipped
    assert doc.inputs[0].shape == (1, 8) and doc.variants is None
    assert text.count("\n#@variant ") == 2


def test_a_range_is_converted_at_its_ends_and_middle_and_recorded(bert, tmp_path):
    ranged = converter.convert(bert, tmp_path / "r.json", dims={"sequence": (8, 32)})
    assert ranged.points == [{"sequence": 8}, {"sequence": 20}, {"sequence": 32}]
    assert ranged.ranges == {"sequence": (8, 32)}
    back = converter.load(tmp_path / "r.json")
    assert back.ranges == {"sequence": (8, 32)} and back.points == ranged.points
    assert_matches_source(bert, lambda f: converter.run(back, f, dims={"sequence": 20}), 20)
    assert range_values(3, 5) == [3, 4, 5] and range_values(1, 100) == [1, 50, 100]


def test_verify_picks_the_variant_at_dims(bert, variants):
    report = converter.verify(bert, variants, dims={"sequence": 16})
    assert report.passed
    assert report.outputs[0].shape in ((1, 16, 16), [1, 16, 16])


@pytest.mark.parametrize("sequence", [13, 24])
def test_a_length_never_converted_is_built_from_the_expressions(bert, variants, tmp_path,
                                                                sequence):
    at = {"sequence": sequence}
    graph = variants.at(at)
    assert graph.inputs["input_ids"].shape == (1, sequence)
    assert_matches_source(bert, lambda f: converter.run(graph, f), sequence)
    converter.save(variants, tmp_path / "b.webnn")  # from the file: checked leaving 16 out
    read = converter.load(tmp_path / "b.webnn", dims=at)
    assert_matches_source(bert, lambda f: converter.run(read, f), sequence)
    assert converter.verify(bert, variants, dims=at).passed


def test_a_value_outside_the_range_or_the_structure_is_refused_naming_the_listed(variants):
    with pytest.raises(ConverterError, match=r"no variant at sequence=40: converted at "
                                             r"sequence=8; sequence=16; sequence=32; the "
                                             r"expressions hold for sequence in 8..32"):
        variants.at({"sequence": 40})
    b = converter.GraphBuilder("forms")
    small = b.build({"y": b.relu(b.input("x", "float32", [2, 4]))})
    b = converter.GraphBuilder("forms")
    large = b.build({"y": b.sigmoid(b.input("x", "float32", [8, 4]))})
    two = Variants(("rows",), [({"rows": 2}, small), ({"rows": 8}, large)])
    with pytest.raises(ConverterError, match="no variant at rows=5: converted at rows=2; "
                                             "rows=8; other values need one graph"):
        two.at({"rows": 5})
    with pytest.raises(ConverterError, match="several values of sequence"):
        converter.run(variants, feeds_at(8))
    with pytest.raises(ConverterError, match="no dim named batch"):
        variants.at({"sequence": 8, "batch": 2})
    with pytest.raises(ConverterError, match="dims= picks one of several variants"):
        converter.run(variants.entries[0][1], feeds_at(8), dims={"sequence": 8})


@pytest.mark.parametrize("dims, message", [
    ({"s": (8, 8)}, "not \\(LO, HI\\)"), ({"s": (0, 4)}, "not \\(LO, HI\\)"),
    ({"s": []}, "not positive integers"), ({"s": [4, -1]}, "not positive integers"),
    ({"s": 2.5}, "not a positive integer"), ({"s": True}, "not a positive integer")])
def test_bad_dim_values_are_refused_by_name(dims, message):
    with pytest.raises(ConverterError, match=message):
        split_dims(dims)


def test_one_value_lists_are_fixed_and_too_many_combinations_are_refused(bert):
    assert split_dims({"a": [4, 4], "b": [2, 1], "c": 3}) == (
        {"a": 4, "c": 3}, {"b": [1, 2]}, {})
    with pytest.raises(ConverterError, match="no dim is given several values"):
        convert_variants(bert, {"sequence": [8]})
    many = {"sequence": list(range(1, MAX_VARIANTS + 2))}
    with pytest.raises(ConverterError, match=f"more than the {MAX_VARIANTS} conversions"):
        convert_variants(bert, many)


def test_the_built_graph_is_checked_against_the_expressions(variants):
    from fractions import Fraction

    from converter.dynamic.instantiate import graph_at
    from converter.dynamic.symbolic import Expr, polymorphic

    poly = polymorphic(variants)
    assert graph_at(poly, {"sequence": 20}).outputs["last_hidden_state"].shape == (1, 20, 16)
    poly.output_shapes["last_hidden_state"] = [Expr.constant(1), Expr.constant(99),
                                               Expr.constant(16)]
    with pytest.raises(ConverterError, match=r"disagrees with its op rules: output "
                                             r"'last_hidden_state' is \[1, 20, 16\], the "
                                             r"expressions give \[1, 99, 16\]"):
        graph_at(poly, {"sequence": 20})
    poly.input_shapes["input_ids"] = [Expr.constant(1), Expr(((("sequence",), Fraction(1, 2)),))]
    with pytest.raises(ConverterError, match="would be 21/2 here, not a whole number"):
        graph_at(poly, {"sequence": 21})
