"""Issue 14's acceptance on the exports users make (models/dynamic/, from tiny random
transformers configurations): each converted once on the command line for several sequence
lengths (or image sizes) into one module and one weights file, built in Chromium at the listed
values and at values never converted, and compared with the source on ONNX Runtime at the same
dims. (tests/browser/test_dynamic_fixtures.py has the batch x sequence grid and the TFLite
batch.)"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from tests.dynamic.test_fixtures import text_inputs

FIXTURES = Path(__file__).resolve().parents[2] / "models" / "dynamic"


def _convert(tmp_path, source: Path, *dims: str) -> tuple[Path, str]:
    module = tmp_path / f"{source.stem}.js"
    args = ["convert", str(source), "-o", str(module)]
    for d in dims:
        args += ["--dim", d]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return module, result.output


@pytest.mark.parametrize("name, lengths", [
    ("bert_legacy", (8, 16, 24, 32)),  # the acceptance: 24 was never converted
    ("gpt2_dynamo", (13, 24)),
    ("llama_legacy", (13, 24)),
])
def test_a_text_export_is_one_module_for_every_length(browser_limits, tmp_path, name, lengths):
    source = FIXTURES / f"{name}.onnx"
    module, said = _convert(tmp_path, source, "batch=1", "sequence=8,16,32")
    assert "one builder for sequence in 8..32" in said and "checked at sequence=24" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{name}.{s}" for s in ("html", "js", "manifest.json", "weights")]
    single = tmp_path / "single"
    single.mkdir()
    _convert(single, source, "batch=1", "sequence=32")
    size, one = ((t / f"{name}.weights").stat().st_size for t in (tmp_path, single))
    assert size <= 1.05 * one, (size, one)
    for sequence in lengths:
        at = {"batch": 1, "sequence": sequence}
        # a mask with padding: the masked positions must be masked at this length too
        inputs = text_inputs(at, seed=sequence)
        inputs["attention_mask"][0, sequence - 2:] = 0
        report = converter.verify(source, module, dims=at, inputs=inputs, runtime="chromium")
        assert report.passed, report.to_json()
        (out,) = report.outputs
        assert list(out.shape) == [1, sequence, 32] and out.cosine >= 0.9999, sequence


def test_a_cnn_takes_any_even_image_size_in_range(browser_limits, tmp_path):
    """Its stride-2 convolution halves the height and width: one builder for the even sizes."""
    source = FIXTURES / "cnn_legacy.onnx"
    module, said = _convert(tmp_path, source, "batch=1", "height=16,32,64", "width=16,32,64")
    assert "one builder for height in 16..64 in steps of 2, width in 16..64 in steps of 2" in said
    assert "checked at height=48,width=48" in said
    assert 'export const DIMS = {"height": {min: 16, max: 64, step: 2}, ' \
           '"width": {min: 16, max: 64, step: 2}};' in module.read_text()
    for height, width in ((24, 40), (18, 62)):
        at = {"batch": 1, "height": height, "width": width}
        report = converter.verify(source, module, dims=at, runtime="chromium")
        assert report.passed, report.to_json()
        assert report.outputs[0].cosine >= 0.9999
    with pytest.raises(converter.ConverterError) as caught:
        converter.verify(source, module, dims={"batch": 1, "height": 25, "width": 40},
                         runtime="chromium")
    assert 'dimension "height" must be an integer in 16..64 in steps of 2, got 25' in \
        caught.value.line()


def test_a_vit_whose_position_table_is_resized_gets_one_builder_per_size(browser_limits,
                                                                          tmp_path):
    """The export interpolates its position table to the image size: a constant that differs
    between sizes in no way a shape expression can follow, so one builder per listed size."""
    source = FIXTURES / "vit_sized_legacy.onnx"
    module, said = _convert(tmp_path, source, "batch=1", "height=32,48", "width=40")
    assert "one builder per value (height in 32, 48)" in said and "not a leading corner" in said
    assert 'export const DIMS = {"height": {values: [32, 48]}};' in module.read_text()
    for height, tokens in ((32, 21), (48, 31)):  # (h/8) * (40/8) patches + the class token
        at = {"batch": 1, "height": height, "width": 40}
        report = converter.verify(source, module, dims=at, runtime="chromium")
        assert report.passed, report.to_json()
        assert list(report.outputs[0].shape) == [1, tokens, 32]
    with pytest.raises(converter.ConverterError) as caught:
        converter.verify(source, module, dims={"batch": 1, "height": 40, "width": 40},
                         runtime="chromium")
    assert 'dimension "height" must be one of 32, 48, got 40' in caught.value.line()
