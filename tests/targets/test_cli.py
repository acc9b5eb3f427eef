"""`webnn-convert check` and `webnn-convert targets`, through click's CliRunner.

The commands are invoked as a group of their own, so these tests do not depend on how the main
command registers them.
"""
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import converter
from cli.commands import check_graph, list_targets
from converter.errors import ConverterError
from converter.fetch import fetch_model
from converter.targets import EXTENSION
from converter.targets.check import check_all

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"
ZOO = json.loads((ROOT / "models" / "zoo.json").read_text())
# Every public model that converts (ONNX and TFLite), the stateful wake-word TFLite models
# included (their variables are graph state: tests/importers/tflite/test_variables.py).
PUBLIC_MODELS = {m["id"]: m for m in ZOO["models"] if m["expect"] == "verified"}
TARGETS = ["chromium-litert", "coreml", "directml", "onnxruntime", "spec"]
GROUP = click.Group(commands=[check_graph.command, list_targets.command])


def run(*args):
    return CliRunner().invoke(GROUP, [str(a) for a in args])


def _shapes(model_id):
    """The zoo's input shapes that --input-shape can say (a scalar's shape is already static)."""
    return {k: v for k, v in PUBLIC_MODELS[model_id].get("inputShapes", {}).items() if v}


def _zoo_args(model_id):
    args = [fetch_model(PUBLIC_MODELS[model_id]["source"])]
    for name, shape in _shapes(model_id).items():
        args += ["--input-shape", f"{name}={','.join(map(str, shape))}"]
    return args


def test_targets_lists_the_builtin_targets():
    r = run("targets")
    assert r.exit_code == 0, r.output
    rows = [line.split() for line in r.output.splitlines()[1:-1]]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("chromium-litert", "nhwc", "95"), ("coreml", "nchw", "95"), ("directml", "nchw", "95"),
        ("onnxruntime", "nchw", "95"), ("spec", "nchw", "95")]
    assert r.output.splitlines()[-1] == "5 targets"
    data = json.loads(run("targets", "--json").output)
    assert [t["name"] for t in data] == TARGETS
    coreml = data[1]
    assert coreml["preferredLayout"] == "nchw" and coreml["ops"] == 95
    assert coreml["constantOperands"]["batchNormalization"] == ["mean", "variance", "scale",
                                                                "bias"]


def test_check_all_on_a_model_that_fits_everywhere():
    r = run("check", TINY, "--target", "all")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["target", "layout", "result", "first", "reasons"]
    assert [line.split()[:3] for line in lines[1:6]] == [
        [t, layout, "fits"] for t, layout in zip(TARGETS, ["nhwc"] + ["nchw"] * 4)]
    assert lines[-1] == f"{TINY}: 10 operations; fits every target"


def test_check_one_target_that_fits():
    r = run("check", TINY, "--target", "coreml")
    assert r.exit_code == 0, r.output
    assert r.output == f"{TINY}: fits coreml (10 operations; emulated there: gemm)\n"


@pytest.mark.parametrize("model_id", sorted(PUBLIC_MODELS))
def test_check_all_on_each_public_model_prints_the_table(model_id):
    args = _zoo_args(model_id)
    r = run("check", *args, "--target", "all")
    graph = converter.load(args[0], input_shapes=_shapes(model_id))
    expected = check_all(graph)
    failing = [name for name, found in expected.items() if found]
    assert r.exit_code == (1 if failing else 0), r.output
    rows = {line.split()[0]: line for line in r.output.splitlines()[1:6]}
    assert sorted(rows) == TARGETS
    for name, found in expected.items():
        result = "fits" if not found else f"{len(found)} violation{'s' * (len(found) > 1)}"
        assert result in rows[name]
        if found:  # the first reason is in the row
            assert found[0].short()[:40] in rows[name]
    summary = f"does not fit {', '.join(failing)}" if failing else "fits every target"
    assert r.output.splitlines()[-1] == f"{args[0]}: {len(graph.operations)} operations; {summary}"


def test_check_against_a_target_that_cannot_take_the_model_lists_every_reason():
    args = _zoo_args("silero_vad_16k_op15")
    r = run("check", *args, "--target", "coreml")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[-1] == f"{args[0]}: does not fit coreml (10 violations)"
    reasons = lines[:-1]
    assert len(reasons) == 10 and all(line.startswith("coreml: ") for line in reasons)
    assert reasons[0] == ("coreml: graph input 'sr': data type int64; coreml takes float32, "
                          "float16, int32; fix: the 'data_types' pass narrows int64 to int32 "
                          "(constants checked for overflow)")
    assert all("data type int64" in line and "'data_types' pass" in line for line in reasons)
    data = json.loads(run("check", *args, "--target", "coreml", "--json").output)
    assert data["passed"] is False and list(data["targets"]) == ["coreml"]
    violations = data["targets"]["coreml"]["violations"]
    assert len(violations) == 10
    assert {(v["kind"], v["found"]) for v in violations} == {("data-type", "data type int64")}
    assert violations[0] == {"target": "coreml", "kind": "data-type", "op": None, "node": None,
                             "operand": "input", "tensor": "sr", "found": "data type int64",
                             "rule": "coreml takes float32, float16, int32",
                             "fix": "the 'data_types' pass narrows int64 to int32 (constants "
                                    "checked for overflow)", "advice": "int64-to-int32"}


def test_check_against_a_target_file(tmp_path):
    doc = json.loads((ROOT / "converter" / "targets" / "data" / "spec.json").read_text())
    doc.pop(EXTENSION)
    doc.pop("conv2d")
    path = tmp_path / "no-conv.opSupportLimits.json"
    path.write_text(json.dumps(doc))
    r = run("check", TINY, "--target", path)
    assert r.exit_code == 1
    unsupported = [line for line in r.output.splitlines() if "conv2d is not supported" in line]
    assert len(unsupported) == 2  # tiny_cnn has two convolutions
    assert unsupported[0].startswith("no-conv: conv2d '")
    assert r.output.splitlines()[-1] == f"{TINY}: does not fit no-conv (2 violations)"


def test_check_unknown_target_is_an_error():
    r = run("check", TINY, "--target", "tpu")
    assert isinstance(r.exception, ConverterError)
    assert "no target named 'tpu'" in str(r.exception)
