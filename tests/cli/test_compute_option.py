"""`convert --compute float16` and `verify --compute float16`: the graph computes in float16
where the target takes it (-v lists what stays float32), the file keeps a float32 interface,
verify judges it by the float16 bounds, `verify --weights float16 --compute float16` measures
it against the float source; where it makes no sense it is one error line, nothing written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import converter
from cli.main import main

TINY = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_the_cli_and_the_pass_take_the_same_types():
    from cli.options import COMPUTE_TYPES
    from converter.passes.float16_compute import COMPUTE_TYPES as PASS_COMPUTE_TYPES

    assert COMPUTE_TYPES == PASS_COMPUTE_TYPES == ("float32", "float16")


@pytest.mark.parametrize("target, computed", [(None, 8), ("chromium-litert", 9)])
def test_convert_compute_float16(tmp_path, target, computed):
    """chromium-litert's graph has one more op (the nhwc input's transpose)."""
    with_target = ["--target", target] if target else []
    r = _run("convert", TINY, "-o", tmp_path / "f16.webnn", "--compute", "float16", "-v",
             *with_target)
    assert r.exit_code == 0, r.output
    assert f"float16_compute: {computed} operations compute in float16, 4 casts" in r.stderr
    assert ("float16_compute: kept float32 (normalization statistics stay float32, as ONNX "
            "Runtime computes them): softmax 'Softmax_9/softmax'") in r.stderr, r.stderr
    graph = converter.load(tmp_path / "f16.webnn")
    assert graph.inputs["image"].data_type == graph.outputs["probabilities"].data_type \
        == "float32"
    assert sum(o.data_type == "float16" for o in graph.constants.values()) == 6
    for op in graph.operations:
        if op.op_type in ("conv2d", "gemm", "relu", "maxPool2d"):
            assert op.output.data_type == "float16", op


def test_verify_judges_by_the_float16_bounds():
    r = _run("verify", TINY, "--target", "chromium-litert", "--compute", "float16", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["verdict"] == "pass"
    assert any("computed in float16" in n for n in report["notes"]), report["notes"]


def test_verify_measures_float16_compute_against_the_float_source():
    r = _run("verify", TINY, "--target", "chromium-litert", "--weights", "float16",
             "--compute", "float16", "--samples", "4")
    assert r.exit_code == 0, r.output
    # the float graph keeps the float policy; the compressed one computes in float16
    assert "cosine >= 0.9999; ONNX Runtime" in r.stdout
    assert "note: probabilities computed in float16 inside the graph" in r.stdout
    assert "accuracy: pass" in r.stdout


@pytest.mark.parametrize("args, words", [
    (["-o", "{out}/out.tflite", "--compute", "float16"],
     "float16 compute is kept in .webnn, .json, .js and .onnx outputs only"),
    (["-o", "{out}/out.webnn", "--compute", "float64"], '"float32", "float16"'),
    (["-o", "{out}/out.webnn", "--compute", "float16", "--dim", "N=1,2"],
     "--compute float16 converts one value of each --dim"),
    (["-o", "{out}/out.webnn", "--compute", "float16", "--target", "{tmp}/none.json"],
     "takes no float16 operand"),
])
def test_convert_refuses_in_one_line(tmp_path, args, words):
    doc = json.loads((Path(converter.__file__).parent / "targets" / "data" / "coreml.json")
                     .read_text())
    for op, limits in doc.items():  # coreml without float16 anywhere
        if op != "webnn-converter" and isinstance(limits, dict):
            for entry in [limits] if "dataTypes" in limits else limits.values():
                if isinstance(entry, dict) and "dataTypes" in entry:
                    entry["dataTypes"] = [t for t in entry["dataTypes"] if t != "float16"]
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "none.json").write_text(json.dumps(doc))
    r = _run("convert", TINY, *[a.format(out=folder, tmp=tmp_path) for a in args])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    errors = [ln for ln in r.output.splitlines() if ln.lower().startswith("error")]
    assert len(errors) == 1 and words in errors[0], r.output
    assert list(folder.iterdir()) == []


def test_verify_refuses_compute_with_a_graph_given(tmp_path):
    converter.convert(TINY, tmp_path / "g.webnn")
    r = _run("verify", TINY, "--graph", tmp_path / "g.webnn", "--compute", "float16")
    assert r.exit_code == 2 and "--compute converts SOURCE now" in r.output, r.output
