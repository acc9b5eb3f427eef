"""The Python API: converter.convert, converter.check, converter.verify(target=, inputs=), and
`import converter` staying light."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import converter
from converter.errors import ConverterError, UnsupportedError

ROOT = Path(__file__).parents[1]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"


def test_convert_for_a_target_writes_by_suffix(tmp_path):
    out = tmp_path / "cnn.webnn"
    graph = converter.convert(TINY_CNN, out, target="coreml", io_layout="nhwc")
    assert isinstance(graph, converter.Graph)
    assert out.exists() and (tmp_path / "cnn.weights").exists()
    assert converter.check(graph, "coreml") == []
    assert graph.inputs["image"].shape == (1, 32, 32, 3)  # the layout asked for at the boundary
    assert converter.load(out).inputs["image"].shape == (1, 32, 32, 3)
    # The graph computes what the source does, on the source's layout moved to NHWC.
    x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    want = converter.run(converter.load(TINY_CNN), {"image": x})["probabilities"]
    got = converter.run(graph, {"image": x.transpose(0, 2, 3, 1)})["probabilities"]
    assert np.abs(got - want).max() < 1e-5


def test_convert_without_output_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    graph = converter.convert(TINY_CNN)
    assert len(graph.operations) == 10 and list(tmp_path.iterdir()) == []


def test_convert_refuses_its_source_as_output(tmp_path):
    source = tmp_path / "m.onnx"
    source.write_bytes(TINY_CNN.read_bytes())
    with pytest.raises(ConverterError, match="is an input"):
        converter.convert(source, source)
    assert source.read_bytes() == TINY_CNN.read_bytes()
    with pytest.raises(ConverterError, match="io_layout applies with a target"):
        converter.convert(source, io_layout="nhwc")


def test_convert_raises_what_a_target_cannot_take(tmp_path):
    """A target without conv2d (the spec's limits less that op): no pass can remove it."""
    limits = json.loads((ROOT / "converter/targets/data/portable.json").read_text())
    del limits["conv2d"]
    limits["webnn-converter"]["name"] = "no-conv"
    target = tmp_path / "no-conv.json"
    target.write_text(json.dumps(limits))
    found = converter.check(TINY_CNN, target)
    assert ("unsupported-op", "conv2d") in {(v.kind, v.op) for v in found}
    with pytest.raises(UnsupportedError, match="conv2d"):
        converter.convert(TINY_CNN, tmp_path / "x.webnn", target=target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no-conv.json"]


def test_check_takes_a_path_or_a_graph():
    found = converter.check(TINY_CNN, "portable")
    assert found == converter.check(converter.load(TINY_CNN), "portable") == []


def test_verify_with_a_target_and_given_inputs():
    x = np.random.default_rng(5).random((1, 3, 32, 32), dtype=np.float32)
    report = converter.verify(TINY_CNN, target="coreml", inputs={"image": x})
    assert report.passed
    assert report.inputs["image"]["made"] == "given"
    assert report.outputs[0].max_abs < 1e-5
    with pytest.raises(ConverterError, match="not both"):
        converter.verify(TINY_CNN, converter.load(TINY_CNN), target="coreml")


def test_public_functions_are_typed():
    import inspect

    for name in ("load", "convert", "save", "check", "run", "verify", "verify_steps"):
        sig = inspect.signature(getattr(converter, name))
        assert sig.return_annotation is not inspect.Signature.empty, name
        for p in sig.parameters.values():
            assert p.annotation is not inspect.Parameter.empty, (name, p.name)


def test_import_converter_stays_light():
    code = ("import sys, converter, converter.__main__; "
            "print(sorted(m for m in ('numpy', 'onnx', 'onnxruntime', 'click', 'rich', "
            "'cli.main') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
