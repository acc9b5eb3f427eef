"""The Python API in daily use (issue 27): a graph file's path wherever a graph is taken, a
report that prints as `webnn-convert verify` does, convert(verify=, dequantize=), help()
listing the public API, FileNotFoundError for a missing file."""
from __future__ import annotations

import os
import pydoc
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import converter
from converter.errors import ConverterError
from tests.passes.quantized_models import decoder_block

ROOT = Path(__file__).parents[1]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"


@pytest.fixture(scope="module")
def tiny_cnn_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("graph") / "cnn.webnn"
    converter.convert(TINY_CNN, out)
    return out


@pytest.mark.parametrize("as_path", [str, Path])
def test_verify_takes_a_graph_files_path(tiny_cnn_file, as_path):
    by_path = converter.verify(TINY_CNN, as_path(tiny_cnn_file), seed=3)
    by_graph = converter.verify(TINY_CNN, converter.load(tiny_cnn_file), seed=3)
    assert by_path.passed and by_graph.passed
    assert by_path.graph == str(tiny_cnn_file)
    (a,), (b,) = by_path.outputs, by_graph.outputs
    assert (a.name, a.max_abs, a.max_rel, a.max_ulp) == (b.name, b.max_abs, b.max_rel, b.max_ulp)
    assert 0 < a.max_abs < 1e-5


def test_run_takes_a_graph_files_path(tiny_cnn_file):
    x = np.random.default_rng(1).random((1, 3, 32, 32), dtype=np.float32)
    got = converter.run(os.fspath(tiny_cnn_file), {"image": x})["probabilities"]
    want = converter.run(converter.load(tiny_cnn_file), {"image": x})["probabilities"]
    assert got.shape == (1, 10) and np.array_equal(got, want)


def test_a_report_prints_what_the_cli_prints(tmp_path):
    from cli.commands import verify_model

    report = converter.verify(TINY_CNN, seed=2)
    printed = CliRunner().invoke(verify_model.command, [str(TINY_CNN), "--seed", "2"]).output
    assert str(report) == printed.rstrip("\n")
    assert str(report).splitlines()[:2] == [
        "webnn-onnx vs onnxruntime",
        "output         shape    max abs   max rel   max ULP  cosine    worst at  result"]
    assert str(report).splitlines()[-1] == "pass" and report.lines() == str(report).splitlines()
    line = repr(report)
    assert "\n" not in line and len(line) < 200
    assert line.startswith("<VerifyReport passed: 1 output, worst max abs ")
    assert "(probabilities)" in line


def test_convert_verify_returns_the_graph_on_a_pass(tmp_path):
    out = tmp_path / "cnn.webnn"
    graph = converter.convert(TINY_CNN, out, verify=True, seed=4)
    assert isinstance(graph, converter.Graph) and out.is_file()


def test_convert_verify_raises_on_a_mismatch_and_writes_nothing(tmp_path):
    # bounds of 0 ULP without the float64 oracle: the graph is 3 ULP from ONNX Runtime
    with pytest.raises(converter.VerificationError) as caught:
        converter.convert(TINY_CNN, tmp_path / "cnn.webnn", verify=True, atol=0, rtol=0, ulp=0,
                          oracle="never")
    assert list(tmp_path.iterdir()) == []
    e = caught.value
    assert isinstance(e, ConverterError) and not e.report.passed
    assert "\n" not in str(e) and "probabilities" in str(e)
    assert "FAIL" in str(e.report) and str(e.report).splitlines()[-2] == "mismatch"


def test_convert_verifies_each_variant(tmp_path):
    source, dims = ROOT / "models/dynamic/cnn_legacy.onnx", {"batch": [1, 2], "height": 32,
                                                              "width": 32}
    variants = converter.convert(source, tmp_path / "cnn.webnn", dims=dims, verify=True)
    assert isinstance(variants, converter.Variants) and (tmp_path / "cnn.webnn").is_file()
    # verification runs (and refuses what it does not know) before anything is written
    with pytest.raises(ConverterError, match="unknown oracle mode 'sometimes'"):
        converter.convert(source, tmp_path / "b.webnn", dims=dims, verify=True,
                          oracle="sometimes")
    assert not (tmp_path / "b.webnn").exists()


def test_convert_dequantize(tmp_path):
    model, _ = decoder_block()
    src = tmp_path / "decoder.onnx"
    onnx.save(model, src)
    kept = converter.convert(src, target="coreml")
    floats = converter.convert(src, target="coreml", dequantize=True, verify=True)
    assert [op.op_type for op in kept.operations].count("dequantizeLinear") == 2
    assert "dequantizeLinear" not in [op.op_type for op in floats.operations]
    with pytest.raises(ConverterError, match="dequantize applies with a target"):
        converter.convert(src, dequantize=True)
    with pytest.raises(ConverterError, match="applies with verify=True"):
        converter.convert(src, atol=1e-3)


def test_convert_is_typed_as_what_it_returns():
    import typing

    hints = typing.get_type_hints(converter.convert, globalns={
        **vars(converter), "Graph": converter.Graph, "Variants": converter.Variants,
        "Target": object, "np": np})
    assert set(typing.get_args(hints["return"])) == {converter.Graph, converter.Variants}


def test_help_lists_the_public_api():
    text = pydoc.render_doc(converter, renderer=pydoc.plaintext)
    for name in ("class GraphBuilder", "class Session", "class Variants", "generate(",
                 "load_decoder(", "verify(", "class MissingFileError", "class VerificationError"):
        assert name in text, name
    for name in converter.__all__:
        assert hasattr(converter, name), name
        assert name == "__version__" or name in converter.__doc__ or name.endswith("Error") \
            or name in ("Operand", "Operation", "ConstantData", "TensorDesc", "Graph"), name


CALLS = {
    "load": lambda missing: converter.load(missing),
    "convert": lambda missing: converter.convert(missing),
    "verify": lambda missing: converter.verify(missing),
    "verify a missing graph": lambda missing: converter.verify(TINY_CNN, missing),
    "run": lambda missing: converter.run(missing, {}),
    "check": lambda missing: converter.check(missing, "portable"),
}


@pytest.mark.parametrize("call,suffix", [
    (call, suffix) for call in CALLS for suffix in (".onnx", ".tflite", ".webnn", ".json")
    if not (call == "verify" and suffix in (".webnn", ".json"))])  # a source is a model
def test_a_missing_file_is_file_not_found(tmp_path, call, suffix):
    missing = tmp_path / f"gone{suffix}"
    with pytest.raises(FileNotFoundError) as caught:
        CALLS[call](missing)
    assert isinstance(caught.value, ConverterError) and str(caught.value).count("\n") == 0
    assert str(missing) in str(caught.value)
    assert list(tmp_path.iterdir()) == []
