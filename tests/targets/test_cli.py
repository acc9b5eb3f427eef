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
from converter.zoo.fetch import fetch_model
from converter.targets import EXTENSION
from converter.targets.pipeline import check_after_passes

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
    litert = data[0]
    assert litert["refusedOptions"] == {"pad": {"mode": ["edge"]}}
    assert litert["maxConstantByteLength"] == 128 * 2**20
    assert coreml["refusedOptions"] == {} and coreml["maxConstantByteLength"] is None


def test_check_all_on_a_model_that_fits_everywhere():
    r = run("check", TINY, "--target", "all")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["target", "layout", "result", "first", "reasons"]
    assert [line.split()[:3] for line in lines[1:6]] == [
        [t, layout, "fits"] for t, layout in zip(TARGETS, ["nhwc"] + ["nchw"] * 4)]
    assert lines[-1] == f"{TINY}: 10 operations; fits every target after conversion"


def test_check_one_target_that_fits():
    r = run("check", TINY, "--target", "coreml")
    assert r.exit_code == 0, r.output
    # the decompose pass turns its gemm into matmul and add: 11 operations, none emulated
    assert r.output == f"{TINY}: fits coreml after conversion (11 operations)\n"


@pytest.mark.parametrize("model_id", sorted(PUBLIC_MODELS))
def test_check_all_on_each_public_model_prints_the_table(model_id):
    args = _zoo_args(model_id)
    r = run("check", *args, "--target", "all")
    operations = len(converter.load(args[0], input_shapes=_shapes(model_id)).operations)
    expected = {name: check_after_passes(converter.load(args[0], input_shapes=_shapes(model_id)),
                                         name) for name in TARGETS}
    failing = [name for name, report in expected.items() if report.violations]
    assert r.exit_code == (1 if failing else 0), r.output
    rows = {line.split()[0]: line for line in r.output.splitlines()[1:6]}
    assert sorted(rows) == TARGETS
    for name, report in expected.items():
        found = report.violations
        result = "fits" if not found else f"{len(found)} violation{'s' * (len(found) > 1)}"
        assert rows[name].split()[2:3 + bool(found)] == result.split()
        if found:  # the first reason is in the row
            assert found[0].short()[:40] in rows[name]
    summary = f"does not fit {', '.join(failing)}" if failing else "fits every target"
    assert r.output.splitlines()[-1] == (f"{args[0]}: {operations} operations; {summary} "
                                         f"after conversion")


def test_check_lists_what_the_passes_fix_apart_from_the_verdict():
    """silero's int64 breaks coreml 10 times; the data_types pass fixes each: it fits after
    conversion, and the 10 are information, in --json as `fixed`, not as violations."""
    args = _zoo_args("silero_vad_16k_op15")
    r = run("check", *args, "--target", "coreml")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "coreml: fixed by pass data_types: 10 violations",
        f"{args[0]}: fits coreml after conversion (45 operations)"]
    data = json.loads(run("check", *args, "--target", "coreml", "--json").output)
    assert data["passed"] is True and list(data["targets"]) == ["coreml"]
    result = data["targets"]["coreml"]
    assert result["violations"] == [] and result["fixedByPass"] == {"data_types": 10}
    fixed = result["fixed"]
    assert len(fixed) == 10
    assert {(v["kind"], v["found"], v["fixedBy"]) for v in fixed} == {
        ("data-type", "data type int64", "data_types")}
    assert fixed[0] == {"target": "coreml", "kind": "data-type", "op": None, "node": None,
                        "operand": "input", "tensor": "sr", "found": "data type int64",
                        "rule": "coreml takes float32, float16, int32",
                        "fix": "the 'data_types' pass narrows int64 to int32 (constants "
                               "checked for overflow)", "advice": "int64-to-int32",
                        "fixedBy": "data_types"}


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
    assert r.output.splitlines()[-1] == (f"{TINY}: does not fit no-conv (2 violations after "
                                         f"its passes)")


def test_a_target_file_refusing_an_option_value_the_op_lacks_is_refused(tmp_path):
    doc = json.loads((ROOT / "converter" / "targets" / "data" / "spec.json").read_text())
    doc[EXTENSION] = {"refusedOptions": {"pad": {"mode": ["wrap"]}}}
    path = tmp_path / "wrap.json"
    path.write_text(json.dumps(doc))
    r = run("check", TINY, "--target", path)
    assert isinstance(r.exception, ConverterError)
    assert r.exception.line() == (f"{path}: refusedOptions: pad mode has no value 'wrap'; its "
                                  f"values are constant, edge, reflection")


def test_check_unknown_target_is_an_error():
    r = run("check", TINY, "--target", "tpu")
    assert isinstance(r.exception, ConverterError)
    assert "no target named 'tpu'" in str(r.exception)
