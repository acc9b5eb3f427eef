"""Issue 27: an emitted .js module converted with --io-layout declares its boundary
permutations (`export const permuted = ...`), so `verify --graph MODULE.js --runtime chromium`
feeds the browser in the module's layout and the source in its own; a wrong declaration is a
mismatch, a malformed one an error."""
from pathlib import Path

import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.errors import ConverterError
from tests.verification.test_io_layout import segmenter

CNN_LEGACY = Path(__file__).parents[2] / "models" / "dynamic" / "cnn_legacy.onnx"


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_a_presented_module_verifies_in_chromium(browser_limits, tmp_path):
    source = segmenter(tmp_path / "seg.onnx", 16, 16)
    module = tmp_path / "seg.js"
    converter.convert(source, module, target="chromium-litert", io_layout="nhwc")
    assert 'export const permuted = {"inputs": {"image": [0, 2, 3, 1]}, "outputs": ' \
           '{"mask": [0, 2, 3, 1]}};' in module.read_text()
    report = converter.verify(source, module, runtime="chromium")
    assert report.passed and report.permuted["outputs"] == {"mask": [0, 2, 3, 1]}
    assert all(o.max_abs < 1e-4 for o in report.outputs)
    module.write_text(module.read_text().replace('"outputs": {"mask": [0, 2, 3, 1]}',
                                                 '"outputs": {"mask": [0, 3, 2, 1]}'))
    r = run("verify", source, "--graph", module, "--runtime", "chromium")
    assert r.exit_code == 1 and "mismatch" in r.output, r.output


def test_a_presented_module_of_several_dims_verifies_at_one(browser_limits, tmp_path):
    module = tmp_path / "cnn.js"
    dims = ["--dim", "batch=1", "--dim", "width=16"]
    r = run("convert", CNN_LEGACY, "-o", module, *dims, "--dim", "height=16,24", "--target",
            "chromium-litert", "--io-layout", "nhwc")
    assert r.exit_code == 0, r.output
    r = run("verify", CNN_LEGACY, "--graph", module, "--runtime", "chromium", *dims,
            "--dim", "height=24")
    assert r.exit_code == 0 and "transposed by [0, 2, 3, 1]" in r.output, r.output


@pytest.mark.parametrize("line,message", [
    ('export const permuted = {"inputs": {"nope": [0, 2, 3, 1]}};',
     "permuted input 'nope' is not an input of the graph"),
    ('export const permuted = {"inputs": {"image": [0, 2, 2, 1]}};', "is not a permutation"),
    ("export const permuted = [1, 2];", "the permuted record is not an object"),
    ('export const permuted = {"inputs": ', "permuted record"),
])
def test_a_malformed_declaration_is_one_clear_error(tmp_path, line, message):
    """Read before the browser starts: no browser needed."""
    source = segmenter(tmp_path / "seg.onnx")
    module = tmp_path / "seg.js"
    converter.convert(source, module, target="chromium-litert", io_layout="nhwc")
    text = module.read_text()
    start = text.index("export const permuted = ")
    end = text.index("\n", start)
    module.write_text(text[:start] + line + text[end:])
    with pytest.raises(ConverterError) as info:
        converter.verify(source, module, runtime="chromium")
    assert message in info.value.line() and "seg.js" in info.value.line()
