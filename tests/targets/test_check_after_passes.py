"""`check --target T` answers "will `convert --target T` succeed?": its verdict is taken after
the target's passes, and what the passes fix is listed apart, as information (issue 27 point 4).
"""
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli.commands import check_graph, convert_model

ROOT = Path(__file__).resolve().parents[2]
DYNAMIC = ROOT / "models" / "dynamic"
BERT = [DYNAMIC / "bert_legacy.onnx", "--dim", "batch=1", "--dim", "sequence=8"]
FIXTURES = {
    "tiny_cnn": [ROOT / "models" / "tiny_cnn.onnx"],
    "bert_legacy": BERT,
    "gpt2_dynamo": [DYNAMIC / "gpt2_dynamo.onnx", "--dim", "batch=1", "--dim", "sequence=8"],
    "llama_legacy": [DYNAMIC / "llama_legacy.onnx", "--dim", "batch=1", "--dim", "sequence=8"],
    "vit_legacy": [DYNAMIC / "vit_legacy.onnx", "--dim", "batch=1"],
    "cnn_batch": [DYNAMIC / "cnn_batch.tflite", "--dim", "batch=1"],
}
TARGETS = ["chromium-litert", "coreml", "directml", "onnxruntime", "spec"]
GROUP = click.Group(commands=[check_graph.command, convert_model.command])


def run(*args):
    return CliRunner().invoke(GROUP, [str(a) for a in args])


@pytest.mark.parametrize("target", ["spec", "coreml"])
def test_bert_fits_spec_and_coreml_after_the_passes_that_fix_its_int64(target, tmp_path):
    r = run("check", *BERT, "--target", target)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[-1] == f"{BERT[0]}: fits {target} after conversion (44 operations)"
    # the 12 violations of the source are information, each with the pass that fixes it
    assert f"{target}: fixed by pass data_types: 8 violations" in lines
    assert f"{target}: fixed by its other passes: 4 violations" in lines
    data = json.loads(run("check", *BERT, "--target", target, "--json").output)
    result = data["targets"][target]
    assert data["passed"] is True and result["passed"] is True and result["violations"] == []
    assert len(result["fixed"]) == 12
    assert result["fixedByPass"] == {"data_types": 8, "": 4}
    assert {v["found"] for v in result["fixed"] if v["fixedBy"] == "data_types"} == {
        "data type int64"}
    convert = run("convert", *BERT, "--target", target, "-o", tmp_path / "bert.webnn")
    assert convert.exit_code == 0, convert.output


def test_check_all_gives_each_target_its_verdict_after_the_passes():
    r = run("check", *BERT, "--target", "all")
    assert r.exit_code == 1, r.output  # directml: int32 notEqual remains
    rows = {line.split()[0]: line.split() for line in r.output.splitlines()[1:6]}
    assert rows["spec"][2:] == ["fits"] and rows["coreml"][2:] == ["fits"]
    assert rows["directml"][2:4] == ["2", "violations"]
    assert r.output.splitlines()[-1] == (f"{BERT[0]}: 47 operations; does not fit directml "
                                         f"after conversion")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_check_says_fits_exactly_when_convert_succeeds(fixture, target, tmp_path):
    args = FIXTURES[fixture]
    check = run("check", *args, "--target", target)
    convert = run("convert", *args, "--target", target, "-o", tmp_path / "out.webnn")
    assert check.exit_code in (0, 1), check.output
    assert convert.exit_code in (0, 1), convert.output
    assert (check.exit_code == 0) == (convert.exit_code == 0), (check.output, convert.output)
    last = check.output.splitlines()[-1]
    assert (f"fits {target} after conversion" in last) == (check.exit_code == 0), last


def _big_constant_graph(path, over: int):
    """matmul by a constant of 128 MiB + `over` bytes (filled lazily: no memory taken)."""
    import converter
    from converter.ir import ConstantData

    b = converter.GraphBuilder("big")
    x = b.input("x", "float32", [1, 1024])
    columns = (128 * 2**20 + over) // 4 // 1024
    w = b.graph.add_constant("w", ConstantData("float32", (1024, columns), fill=1.0))
    converter.save(b.build({"y": b.matmul(x, w)}), path)
    return path


def test_a_constant_over_128_mib_fits_chromium_litert_once_split(tmp_path):
    """Chromium's LiteRT build() refuses a constant over 128 MiB (tests/browser/
    test_chromium_runtime.py), though its maxTensorByteLength is 2 GiB - 1: check names it in
    the source and the split_constants pass as its fix, and says the model fits after
    conversion, as convert --target succeeds, every constant written at most 128 MiB."""
    import converter

    big = _big_constant_graph(tmp_path / "big.webnn", 4096)
    r = run("check", big, "--target", "chromium-litert")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "chromium-litert: fixed by pass split_constants: 1 violation",
        f"{big}: fits chromium-litert after conversion (2 operations)"]
    data = json.loads(run("check", big, "--target", "chromium-litert", "--json").output)
    [fixed] = data["targets"]["chromium-litert"]["fixed"]
    assert (fixed["tensor"], fixed["fixedBy"], fixed["advice"]) == ("w", "split_constants",
                                                                     "split-constant")
    assert fixed["rule"] == f"chromium-litert takes at most {128 * 2**20} bytes a constant"
    out = tmp_path / "out.webnn"
    convert = run("convert", big, "--target", "chromium-litert", "-o", out)
    assert convert.exit_code == 0, convert.output
    graph = converter.load(out)
    # w is 1024 rows of 32769 float32 (131076 bytes): 1023 rows fit under 128 MiB, then 1
    pieces = sorted((c.shape, c.constant.nbytes) for c in graph.constants.values())
    assert pieces == [((1, 32769), 131076), ((1023, 32769), 134090748)]
    assert [op.op_type for op in graph.operations] == ["concat", "matmul"]
    assert run("check", big, "--target", "spec").exit_code == 0  # the limit is LiteRT's
    at_limit = _big_constant_graph(tmp_path / "at.webnn", 0)
    r = run("check", at_limit, "--target", "chromium-litert")
    assert r.exit_code == 0 and "fixed by" not in r.output, r.output


def _edge_pad_int_clip_model(path):
    """An ONNX model with what Chromium's LiteRT build() refuses as it is: Pad(mode=edge) and
    an int32 Clip (tests/browser/test_rewrites_in_chromium.py)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge"),
             helper.make_node("Clip", ["i", "lo", "hi"], ["z"])]
    inits = [numpy_helper.from_array(np.array([0, 2, 1, 3], np.int64), "pads"),
             numpy_helper.from_array(np.array(0, np.int32), "lo"),
             numpy_helper.from_array(np.array(9, np.int32), "hi")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                     helper.make_tensor_value_info("i", TensorProto.INT32, [5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("z", TensorProto.INT32, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def test_an_edge_pad_and_an_int32_clip_fit_chromium_litert_through_its_passes(tmp_path):
    """The source breaks chromium-litert (its build() refuses both: check used to say it fit,
    for the pad); check names the passes that fix them and says it fits after conversion, as
    convert --target succeeds."""
    model = _edge_pad_int_clip_model(tmp_path / "m.onnx")
    r = run("check", model, "--target", "chromium-litert")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "chromium-litert: fixed by pass pad_modes: 1 violation",
        "chromium-litert: fixed by pass int_clamp: 2 violations",
        f"{model}: fits chromium-litert after conversion (4 operations)"]
    data = json.loads(run("check", model, "--target", "chromium-litert", "--json").output)
    fixed = data["targets"]["chromium-litert"]["fixed"]
    assert [(v["kind"], v["op"], v["found"], v["fixedBy"]) for v in fixed] == [
        ("option", "pad", "mode 'edge'", "pad_modes"),
        ("data-type", "clamp", "data type int32", "int_clamp"),
        ("data-type", "clamp", "data type int32", "int_clamp")]
    out = tmp_path / "m.webnn"
    convert = run("convert", model, "--target", "chromium-litert", "-o", out)
    assert convert.exit_code == 0, convert.output
    import converter
    ops = sorted(op.op_type for op in converter.load(out).operations)
    assert ops == ["gather", "gather", "max", "min"]
    # on a target that takes both as they are, nothing is fixed
    r = run("check", model, "--target", "onnxruntime")
    assert r.exit_code == 0 and "fixed by" not in r.output, r.output
