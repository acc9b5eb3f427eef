"""`inspect` and `validate` on models with open dims and on multi-variant `.webnn` files: they
show the dims' names and each variant instead of refusing, and still find real problems."""
import json
from pathlib import Path

import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

from cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "models" / "dynamic" / "cnn_legacy.onnx"
OPEN_MODELS = sorted((ROOT / "models" / "dynamic").glob("*.onnx"))


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _model(path: Path, nodes, shape) -> Path:
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_inspect_shows_the_dims_names_and_the_onnx_ops():
    r = run("inspect", CNN)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("graph main_graph: open dims batch, height, width; "
                               "9 ONNX nodes")
    assert lines[0].endswith("need values: --dim batch=N --dim height=N --dim width=N")
    assert lines[1].split() == ["name", "data", "type", "shape"]
    assert lines[2].split() == ["input", "image", "float32", "[batch,", "3,", "height,",
                                "width]"]
    assert lines[3].split() == ["output", "logits", "float32", "[batch,", "10]"]
    assert ["Conv", "3"] in [line.split() for line in lines]
    info = json.loads(run("inspect", CNN, "--json").output)
    assert info["openDims"] == ["batch", "height", "width"]
    assert info["inputs"] == {"image": {"dataType": "float32",
                                        "shape": ["batch", 3, "height", "width"]}}
    assert info["outputs"]["logits"]["shape"] == ["batch", 10]
    assert info["sourceOpHistogram"] == {"Add": 1, "Conv": 3, "Gemm": 1, "ReduceMean": 1,
                                         "Relu": 3}
    # A dim given takes its value; the rest stay open.
    info = json.loads(run("inspect", CNN, "--json", "--dim", "batch=2").output)
    assert info["openDims"] == ["height", "width"]
    assert info["inputs"]["image"]["shape"] == [2, 3, "height", "width"]
    # Every dim given: the WebNN graph, as before.
    info = json.loads(run("inspect", CNN, "--json", "--dim", "batch=2", "--dim", "height=8",
                          "--dim", "width=8").output)
    assert info["inputs"]["image"]["shape"] == [2, 3, 8, 8] and info["opHistogram"]["conv2d"] == 3


def test_inspect_an_unnamed_open_axis_asks_for_the_input_shape(tmp_path):
    model = _model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], [None, 3])
    info = json.loads(run("inspect", model, "--json").output)
    assert info["openDims"] == [] and info["inputs"]["x"]["shape"] == ["?", 3]
    assert info["needs"] == "--input-shape x=d0,d1,..."


@pytest.mark.parametrize("model", OPEN_MODELS, ids=lambda p: p.name)
def test_validate_calls_an_open_model_valid(model):
    r = run("validate", model)
    assert r.exit_code == 0, r.output
    dims = json.loads(run("inspect", model, "--json").output)["openDims"]
    assert dims and r.output.startswith(f"{model}: valid with open dims ({', '.join(dims)}; ")


def test_validate_still_finds_real_problems_of_an_open_model(tmp_path):
    twice = _model(tmp_path / "twice.onnx", [helper.make_node("Relu", ["x"], ["y"]),
                                             helper.make_node("Abs", ["x"], ["y"])],
                   ["batch", 3])
    r = run("validate", twice)
    assert r.exit_code == 1 and "exactly one producer" in r.output
    r = run("validate", CNN, "--input-shape", "nope=1,2")  # a mistake besides the open dims
    assert r.exit_code == 1 and "'nope', which is not a graph input" in r.output
    r = run("inspect", CNN, "--input-shape", "nope=1,2")
    assert r.exit_code == 2 and "'nope', which is not a graph input" in r.output


@pytest.fixture(scope="module")
def variants_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("variants") / "cnn.webnn"
    r = run("convert", CNN, "-o", out, "--dim", "batch=1,2", "--dim", "height=8",
            "--dim", "width=8")
    assert r.exit_code == 0, r.output
    return out


def test_inspect_shows_each_variant(variants_file):
    info = json.loads(run("inspect", variants_file, "--json").output)
    assert info["variesIn"] == ["batch"] and info["fixed"] == {"height": 8, "width": 8}
    assert [v["dims"] for v in info["variants"]] == [{"batch": 1}, {"batch": 2}]
    assert [v["inputs"]["image"]["shape"] for v in info["variants"]] == [[1, 3, 8, 8],
                                                                        [2, 3, 8, 8]]
    assert all(v["opHistogram"]["conv2d"] == 3 for v in info["variants"])
    r = run("inspect", variants_file)
    assert r.exit_code == 0
    assert r.output.splitlines()[0] == "2 variants, varying in batch; fixed: height=8, width=8"
    assert "variant batch=2:" in r.output.splitlines()
    r = run("inspect", variants_file, "--dim", "batch=2", "--json")  # one variant, as before
    assert json.loads(r.output)["inputs"]["image"]["shape"] == [2, 3, 8, 8]


def test_validate_checks_each_variant(variants_file):
    r = run("validate", variants_file)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == (f"{variants_file}: valid (2 variants: batch=1; batch=2; "
                                f"18 operations in all)")


def test_inspect_a_tflite_dynamic_batch_shows_its_signature():
    model = ROOT / "models" / "dynamic" / "cnn_batch.tflite"
    info = json.loads(run("inspect", model, "--json").output)
    assert info["openDims"] == ["batch"]
    assert info["inputs"]["image"]["shape"] == [1, 8, 8, 3]  # the stored batch, converted
    assert info["symbolicShapes"] == {"inputs": {"image": ["batch", 8, 8, 3]},
                                      "outputs": {"probs": ["batch", 5]}}
    r = run("inspect", model)
    assert "input   image  float32    [1, 8, 8, 3] (in the model: [batch, 8, 8, 3])" \
        in r.output.splitlines()
    info = json.loads(run("inspect", model, "--json", "--dim", "batch=3").output)
    assert "openDims" not in info and info["inputs"]["image"]["shape"] == [3, 8, 8, 3]
