"""Issue 14 in the browser: a BERT-style model converted for sequence 8, 16 and 32 into one
module and one weights file builds in Chromium at any length in 8..32 (24 was never converted)
and matches the source on ONNX Runtime at that length; values outside are refused by name; a
model whose structure changes with the dims gets one builder per value; the page takes the
dims; a dim fixed at conversion is taken at its value only; a batch x sequence grid is one
builder, checked at both batches."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.dynamic.variants import Variants
from converter.dynamic.module_js import write_variants_js
from converter.errors import ConverterError
from converter.runtimes.chromium import browser_page, run_module
from tests.dynamic.tiny_bert import build


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """The model converted once, on the command line, for sequence 8, 16 and 32."""
    folder = tmp_path_factory.mktemp("dynamic")
    source = build(folder / "bert.onnx")
    result = CliRunner().invoke(main, ["convert", str(source), "--dim", "sequence=8,16,32",
                                       "-o", str(folder / "bert.js")])
    assert result.exit_code == 0, result.output
    return source, folder / "bert.js", result.output


def test_one_module_and_one_weights_file_no_larger_than_one_conversion(bert, tmp_path):
    source, module, said = bert
    assert sorted(p.name for p in module.parent.glob("bert.*")) == [
        "bert.html", "bert.js", "bert.manifest.json", "bert.onnx", "bert.weights"]
    assert "one builder for sequence in 8..32: shapes fitted on sequence=8; sequence=16; " \
           "sequence=32, checked at sequence=24" in said
    single = CliRunner().invoke(main, ["convert", str(source), "--dim", "sequence=32",
                                       "-o", str(tmp_path / "single.js")])
    assert single.exit_code == 0, single.output
    size = module.with_suffix(".weights").stat().st_size
    single = (tmp_path / "single.weights").stat().st_size
    assert size <= 1.05 * single, (size, single)
    text = module.read_text()
    assert text.count("export async function buildGraph(context, weights, dims)") == 1
    assert 'export const DIMS = {"sequence": {min: 8, max: 32}};' in text
    assert 'builder.reshape(q_flat, [1, dims["sequence"], 2, 8]' in text


@pytest.mark.parametrize("sequence", [8, 16, 24, 32])
def test_the_module_matches_the_source_at_each_length(browser_limits, bert, sequence):
    source, module, _ = bert
    report = converter.verify(source, module, dims={"sequence": sequence}, runtime="chromium")
    assert report.passed, report.to_json()
    (out,) = report.outputs
    assert list(out.shape) == [1, sequence, 16]
    assert out.max_abs <= 1e-4 and out.cosine >= 0.9999
    assert report.graph_runtime == "chromium" and report.graph == str(module)


def test_the_cli_verifies_the_module_at_a_length_never_converted(browser_limits, bert):
    source, module, _ = bert
    result = CliRunner().invoke(main, ["verify", str(source), "--graph", str(module),
                                       "--runtime", "chromium", "--dim", "sequence=24", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["passed"] and report["outputs"][0]["shape"] == [1, 24, 16]


@pytest.mark.parametrize("dims, words", [
    ({"sequence": 40}, 'dimension "sequence" must be an integer in 8..32, got 40'),
    ({"sequence": 7}, 'dimension "sequence" must be an integer in 8..32, got 7'),
    ({"sequence": 24.5}, 'dimension "sequence" must be an integer in 8..32, got 24.5'),
    ({"sequence": 24, "batch": 2}, 'unknown dimension "batch"; the dims are "sequence": '
                                   'an integer in 8..32'),
])
def test_dims_outside_what_the_module_accepts_are_refused_by_name(browser_limits, bert, dims,
                                                                  words):
    source, module, _ = bert
    like = converter.load(source, dims={"sequence": 8})
    feeds = {n: np.ones(o.shape, np.int64) for n, o in like.inputs.items()}
    with pytest.raises(ConverterError, match="Chromium failed at build") as caught:
        run_module(module, feeds, like, dims)
    assert words in caught.value.line()


def _two_forms(s: int, w: np.ndarray) -> converter.Graph:
    """relu below 16, sigmoid from 16 on: one structure per value, the same weights."""
    b = converter.GraphBuilder("two_forms")
    x = b.input("x", "float32", [s, 64])
    y = b.matmul(x, b.constant(w, name="w"), name="mm")
    return b.build({"y": b.relu(y, name="act") if s < 16 else b.sigmoid(y, name="act")})


def test_a_structure_that_changes_gets_one_builder_per_value(browser_limits, tmp_path):
    w = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    variants = Variants(("s",), [({"s": s}, _two_forms(s, w)) for s in (8, 16)],
                        convert=lambda at: _two_forms(at["s"], w))
    _, note = write_variants_js(variants, tmp_path / "forms.js")
    assert note.startswith("one builder per value (s in 8, 16)") and "s=16" in note
    text = (tmp_path / "forms.js").read_text()
    assert 'export const DIMS = {"s": {values: [8, 16]}};' in text
    assert text.count("async function build") == 3  # two builders and the dispatching one
    # the 16 KiB weight is written once for both builders
    assert (tmp_path / "forms.weights").stat().st_size < w.nbytes + 1024
    x = np.random.default_rng(2).standard_normal((16, 64)).astype(np.float32)
    for s, act in ((8, lambda v: np.maximum(v, 0)), (16, lambda v: 1 / (1 + np.exp(-v)))):
        got = run_module(tmp_path / "forms.js", {"x": x[:s]}, _two_forms(s, w), {"s": s})["y"]
        np.testing.assert_allclose(got, act(x[:s].astype(np.float64) @ w), rtol=1e-4, atol=1e-5)
    with pytest.raises(ConverterError) as caught:
        run_module(tmp_path / "forms.js", {"x": x[:8]}, _two_forms(8, w), {"s": 12})
    assert 'dimension "s" must be one of 8, 16, got 12' in caught.value.line()


def test_the_page_takes_the_dims_and_runs_at_them(browser_limits, bert, tmp_path):
    source, module, _ = bert
    ids = np.random.default_rng(3).integers(0, 50, (1, 24)).astype(np.int64)
    mask = np.ones((1, 24), np.int64)
    np.save(module.parent / "ids24.npy", ids)
    np.save(module.parent / "mask24.npy", mask)
    want = converter.run(converter.load(source, dims={"sequence": 24}),
                         {"input_ids": ids, "attention_mask": mask})["last_hidden_state"]
    page, url = browser_page(module.parent)
    try:
        page.goto(url + "bert.html?sequence=24")
        page.set_input_files('input[data-input="input_ids"]', str(module.parent / "ids24.npy"))
        page.set_input_files('input[data-input="attention_mask"]',
                             str(module.parent / "mask24.npy"))
        page.click("#run")
        page.wait_for_function("window.webnnResult !== undefined")
        result = page.evaluate("window.webnnResult")
        text = page.inner_text("body")
        page.fill('input[data-dim="sequence"]', "40")
        page.dispatch_event('input[data-dim="sequence"]', "change")
        refused = page.inner_text("#status")
    finally:
        page.close()
    assert "error" not in result, result
    out = result["outputs"]["last_hidden_state"]
    assert out["shape"] == [1, 24, 16]
    assert "input_ids\tint64\t[1, 24]" in text and "sequence\t8..32" in text
    np.testing.assert_allclose([float(v) for v in out["first"]], want.reshape(-1)[:8],
                               rtol=1e-5, atol=1e-6)  # the page shows 6 digits
    assert refused == 'Error: RangeError: dimension "sequence" must be an integer in 8..32, got 40'


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    folder = tmp_path_factory.mktemp("batched")
    return build(folder / "bert.onnx", batch="batch")


def test_a_fixed_dim_is_taken_at_its_value_only(browser_limits, batched):
    module = batched.with_name("fixed.js")
    result = CliRunner().invoke(main, ["convert", str(batched), "--dim", "batch=1", "--dim",
                                       "sequence=8,16,32", "-o", str(module)])
    assert result.exit_code == 0, result.output
    assert 'export const FIXED_DIMS = {"batch": 1};' in module.read_text()
    # the source needs batch=1 too: verify passes both, and the module takes it
    report = converter.verify(batched, module, dims={"batch": 1, "sequence": 24},
                              runtime="chromium")
    assert report.passed and list(report.outputs[0].shape) == [1, 24, 16]
    like = converter.load(batched, dims={"batch": 1, "sequence": 24})
    feeds = {n: np.ones(o.shape, np.int64) for n, o in like.inputs.items()}
    # the README's call: the fixed dim left out
    got = run_module(module, feeds, like, {"sequence": 24})["last_hidden_state"]
    want = converter.run(like, feeds)["last_hidden_state"]
    assert got.shape == (1, 24, 16)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ConverterError) as caught:
        run_module(module, feeds, like, {"batch": 2, "sequence": 24})
    assert 'dimension "batch" was fixed at 1 when converting, got 2' in caught.value.line()


def test_a_grid_of_batch_and_sequence_is_one_builder_checked_at_both_batches(browser_limits,
                                                                            batched):
    module = batched.with_name("grid.js")
    result = CliRunner().invoke(main, ["convert", str(batched), "--dim", "batch=1,2", "--dim",
                                       "sequence=8,16,32", "-o", str(module)])
    assert result.exit_code == 0, result.output
    assert "one builder for batch in 1..2, sequence in 8..32" in result.output
    assert "checked at batch=1,sequence=24; batch=2,sequence=24" in result.output
    for batch, sequence in ((2, 24), (1, 11), (2, 32)):
        report = converter.verify(batched, module, dims={"batch": batch, "sequence": sequence},
                                  runtime="chromium")
        assert report.passed, report.to_json()
        (out,) = report.outputs
        assert list(out.shape) == [batch, sequence, 16]
        assert out.max_abs <= 1e-4 and out.cosine >= 0.9999


def test_a_hostile_dim_name_stays_a_name(browser_limits, tmp_path):
    """Dim names come from the model file: quoted everywhere the module and page use them."""
    name = 'n"]; throw 1; //\u2028</script><b>'
    w = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32)

    def at(s: int) -> converter.Graph:
        b = converter.GraphBuilder("hostile")
        x = b.input("x", "float32", [s, 64])
        return b.build({"y": b.reshape(b.matmul(x, b.constant(w, name="w")), [s * 64])})

    variants = Variants((name,), [({name: s}, at(s)) for s in (8, 16, 32)],
                        convert=lambda p: at(p[name]))
    _, note = write_variants_js(variants, tmp_path / "hostile.js")
    assert "checked at" in note
    text = (tmp_path / "hostile.js").read_text()
    assert "</script>" not in text and "\u2028" not in text
    x = np.random.default_rng(5).standard_normal((12, 64)).astype(np.float32)
    got = run_module(tmp_path / "hostile.js", {"x": x}, at(12), {name: 12})["y"]
    np.testing.assert_allclose(got, (x.astype(np.float64) @ w).reshape(-1), rtol=1e-4,
                               atol=1e-4)
    with pytest.raises(ConverterError) as caught:
        run_module(tmp_path / "hostile.js", {"x": x}, at(12), {name: 40})
    assert "must be an integer in 8..32, got 40" in caught.value.line()


def test_one_weights_load_builds_at_several_lengths_as_the_readme_shows(browser_limits, bert):
    source, module, _ = bert
    page, url = browser_page(module.parent)
    try:
        page.goto(url + "bert.html")
        got = page.evaluate("""async () => {
          const { buildGraph, loadWeights, run } = await import("./bert.js");
          const context = await navigator.ml.createContext();
          const weights = await loadWeights();
          const out = {};
          for (const sequence of [24, 9]) {
            const model = await buildGraph(context, weights, {sequence: sequence});
            const ids = BigInt64Array.from({length: sequence}, (_, i) => BigInt(i % 50));
            const mask = new BigInt64Array(sequence).fill(1n);
            const result = await run(context, model, {input_ids: ids, attention_mask: mask});
            out[sequence] = Array.from(result.last_hidden_state);
          }
          return out;
        }""")
    finally:
        page.close()
    for sequence in (24, 9):
        ids = (np.arange(sequence) % 50).astype(np.int64)[None]
        want = converter.run(converter.load(source, dims={"sequence": sequence}),
                             {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        np.testing.assert_allclose(got[str(sequence)], want["last_hidden_state"].reshape(-1),
                                   rtol=1e-4, atol=1e-5)
