"""Issue 27: verifying a graph whose boundary a conversion transposed (`--io-layout`).

Each side is fed in its own layout (inputs made in the source's layout, transposed for the
graph) and the graph's outputs are transposed back before comparison; the permutation is
recorded in the graph file, so `verify --graph` knows it too. A wrong record is a mismatch.
"""
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

import converter
from cli.main import main
from converter.verification.bisect import bisect
from tests.verification.conftest import small_cnn

ROOT = Path(__file__).parents[2]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"
CNN_LEGACY = ROOT / "models" / "dynamic" / "cnn_legacy.onnx"
CNN_BATCH_TFLITE = ROOT / "models" / "dynamic" / "cnn_batch.tflite"


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def segmenter(path: Path, height: int = 12, width: int = 20) -> Path:
    """image [1, 3, H, W] -> Conv 3x3 -> Relu -> Conv 1x1 -> `mask` [1, 4, H, W] (an output
    of the image's layout), and GlobalAveragePool -> Flatten -> `score` [1, 4]."""
    rng = np.random.default_rng(3)
    inits = [nh.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in
             [("w1", (6, 3, 3, 3)), ("b1", (6,)), ("w2", (4, 6, 1, 1)), ("b2", (4,))]]
    nodes = [H.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             H.make_node("Relu", ["c1"], ["r1"]),
             H.make_node("Conv", ["r1", "w2", "b2"], ["mask"]),
             H.make_node("GlobalAveragePool", ["mask"], ["g"]),
             H.make_node("Flatten", ["g"], ["score"])]
    graph = H.make_graph(nodes, "segmenter",
                         [H.make_tensor_value_info("image", TP.FLOAT, [1, 3, height, width])],
                         [H.make_tensor_value_info("mask", TP.FLOAT, [1, 4, height, width]),
                          H.make_tensor_value_info("score", TP.FLOAT, [1, 4])], inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("io_layout")
    return {"tiny_cnn": (TINY_CNN, None),
            "small_cnn": (small_cnn(folder / "small_cnn.onnx"), None),
            "segmenter": (segmenter(folder / "segmenter.onnx"), None),
            "segmenter_square": (segmenter(folder / "square.onnx", 16, 16), None),
            "cnn_legacy": (CNN_LEGACY, {"batch": 1, "height": 24, "width": 40})}


def _within_policy(report):
    assert report.passed, [(o.name, o.reason) for o in report.outputs]
    for o in report.outputs:  # real numbers: the plain comparison, not a verdict's rescue
        assert o.max_abs < 1e-4 and o.cosine > 0.9999, (o.name, o.max_abs, o.cosine)
        assert o.rule.startswith("elementwise") and "decidedBy" not in o.extra, o.to_json()


@pytest.mark.parametrize("name", ["tiny_cnn", "small_cnn", "segmenter", "cnn_legacy"])
@pytest.mark.parametrize("target", ["coreml", "chromium-litert"])
def test_an_onnx_image_model_presented_nhwc_verifies(models, name, target):
    source, dims = models[name]
    graph = converter.convert(source, target=target, io_layout="nhwc", dims=dims)
    report = converter.verify(source, graph, dims=dims)
    _within_policy(report)
    image = next(iter(converter.load(source, dims=dims).inputs))
    assert report.permuted["inputs"] == {image: [0, 2, 3, 1]}
    assert report.inputs[image]["shape"][1] == 3  # made in the source's NCHW layout
    if name.startswith("segmenter"):  # a 4-D output: given NHWC, compared as NCHW
        assert report.permuted["outputs"] == {"mask": [0, 2, 3, 1]}
        assert {o.name: o.shape for o in report.outputs}["mask"] == [1, 4, 12, 20]


def test_convert_verify_then_verify_graph_then_the_api_all_pass(models, tmp_path):
    source, _ = models["segmenter"]
    out = tmp_path / "seg.webnn"
    r = run("convert", source, "-o", out, "--target", "coreml", "--io-layout", "nhwc",
            "--verify", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["permuted"] == {"inputs": {"image": [0, 2, 3, 1]},
                                                "outputs": {"mask": [0, 2, 3, 1]}}
    assert '#@permuted input "image" [0, 2, 3, 1]' in out.read_text()
    r = run("verify", source, "--graph", out, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["passed"] and all(o["maxAbs"] < 1e-4 for o in report["outputs"])
    graph = converter.load(out)
    assert graph.inputs["image"].shape == (1, 12, 20, 3)
    _within_policy(converter.verify(source, graph))
    r = run("verify", source, "--target", "coreml", "--io-layout", "nhwc")
    assert r.exit_code == 0 and "transposed by [0, 2, 3, 1]" in r.output, r.output


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_a_wrong_recorded_input_permutation_is_a_mismatch(tmp_path, suffix):
    """[0, 3, 2, 1] gives the same NHWC shape on a square image, with H and W swapped: the
    graph then computes on a transposed picture, which verify must catch."""
    out = tmp_path / f"cnn{suffix}"
    converter.convert(TINY_CNN, out, target="coreml", io_layout="nhwc")
    assert run("verify", TINY_CNN, "--graph", out).exit_code == 0
    text = out.read_text()
    wrong = text.replace("[0, 2, 3, 1]", "[0, 3, 2, 1]")
    assert wrong != text
    out.write_text(wrong)
    r = run("verify", TINY_CNN, "--graph", out)
    assert r.exit_code == 1 and "mismatch" in r.output, r.output


def test_a_wrong_recorded_output_permutation_is_a_mismatch(models, tmp_path):
    source, _ = models["segmenter_square"]
    out = tmp_path / "seg.webnn"
    converter.convert(source, out, target="coreml", io_layout="nhwc")
    text = out.read_text()
    wrong = text.replace('#@permuted output "mask" [0, 2, 3, 1]',
                         '#@permuted output "mask" [0, 3, 2, 1]')
    assert wrong != text
    out.write_text(wrong)
    report = converter.verify(source, converter.load(out))
    verdict = {o.name: o.passed for o in report.outputs}
    assert verdict == {"mask": False, "score": True}


def test_a_tflite_model_presented_nchw_verifies(tmp_path):
    """cnn_batch.tflite (NHWC) and tiny_cnn exported to an NHWC .tflite, both presented NCHW."""
    exported = tmp_path / "tiny_nhwc.tflite"
    converter.convert(TINY_CNN, exported, target="chromium-litert", io_layout="nhwc")
    for source, dims in [(CNN_BATCH_TFLITE, {"batch": 1}), (exported, None)]:
        report = converter.verify(source, target="coreml", io_layout="nchw", dims=dims)
        _within_policy(report)
        assert report.permuted == {"inputs": {"image": [0, 3, 1, 2]}}
        out = tmp_path / f"{source.stem}.webnn"
        args = ["--dim", "batch=1"] if dims else []
        r = run("convert", source, "-o", out, *args, "--target", "coreml", "--io-layout",
                "nchw", "--verify")
        assert r.exit_code == 0, r.output
        assert run("verify", source, "--graph", out, *args).exit_code == 0
        _within_policy(converter.verify(source, converter.load(out), dims=dims))


def test_given_inputs_are_in_the_source_layout(tmp_path):
    out = tmp_path / "cnn.webnn"
    converter.convert(TINY_CNN, out, target="coreml", io_layout="nhwc")
    x = np.random.default_rng(1).random((1, 3, 32, 32), dtype=np.float32)
    np.save(tmp_path / "nchw.npy", x)
    np.save(tmp_path / "nhwc.npy", x.transpose(0, 2, 3, 1))
    r = run("verify", TINY_CNN, "--graph", out, "--input", f"image={tmp_path / 'nchw.npy'}")
    assert r.exit_code == 0, r.output
    r = run("verify", TINY_CNN, "--graph", out, "--input", f"image={tmp_path / 'nhwc.npy'}")
    assert r.exit_code == 2
    assert "[1, 32, 32, 3] (the graph's layout)" in r.output
    assert "source model's layout, [1, 3, 32, 32]" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_steps_and_bisect_keep_working_with_a_permuted_boundary(models, tmp_path):
    source, _ = models["segmenter"]
    out = tmp_path / "seg.webnn"
    converter.convert(source, out, target="chromium-litert", io_layout="nhwc")
    r = run("verify", source, "--graph", out, "--steps", "2", "--json")
    assert r.exit_code == 0, r.output
    assert bisect(source, converter.load(out), seed=0) is None  # every op within budget
    square, _ = models["segmenter_square"]
    converter.convert(square, tmp_path / "sq.webnn", target="coreml", io_layout="nhwc")
    bad = tmp_path / "sq.webnn"
    bad.write_text(bad.read_text().replace('input "image" [0, 2, 3, 1]',
                                           'input "image" [0, 3, 2, 1]'))
    r = run("verify", square, "--graph", bad, "--bisect")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "first operation out of budget (conversion): conv2d 'c1'" in r.output


def _stateful_image(path: Path) -> Path:
    """x, past [1, 2, 4, 6] -> Concat -> Conv 3x3 -> h; y = sigmoid(h), present = relu(h):
    a state pair of image layout, which --io-layout presents with its initial value."""
    w = nh.from_array(np.random.default_rng(0).standard_normal((2, 4, 3, 3)).astype(np.float32),
                      "w")
    model = H.make_model(H.make_graph(
        [H.make_node("Concat", ["x", "past"], ["xs"], axis=1),
         H.make_node("Conv", ["xs", "w"], ["h"], pads=[1, 1, 1, 1]),
         H.make_node("Relu", ["h"], ["present"]), H.make_node("Sigmoid", ["h"], ["y"])], "st",
        [H.make_tensor_value_info(n, TP.FLOAT, [1, 2, 4, 6]) for n in ("x", "past")],
        [H.make_tensor_value_info(n, TP.FLOAT, [1, 2, 4, 6]) for n in ("y", "present")], [w]),
        opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


def test_a_presented_state_is_fed_and_stepped_in_each_sides_layout(tmp_path):
    from converter.ir.operand import ConstantData
    from converter.ir.state import StateVar
    from converter.targets.pipeline import convert_for_target
    from converter.verification.steps import verify_steps

    source = _stateful_image(tmp_path / "st.onnx")
    graph = converter.load(source)
    start = np.random.default_rng(1).random((1, 2, 4, 6)).astype(np.float32)
    graph.state.append(StateVar("past", "present",
                                ConstantData("float32", [1, 2, 4, 6], array=start)))
    convert_for_target(graph, "coreml", io_layout="nhwc")
    assert graph.inputs["past"].shape == (1, 4, 6, 2)
    saved = tmp_path / "st.webnn"
    converter.save(graph, saved)
    loaded = converter.load(saved)
    assert loaded.metadata["permuted"]["outputs"] == {"y": [0, 2, 3, 1],
                                                      "present": [0, 2, 3, 1]}
    _within_policy(converter.verify(source, loaded))
    report = verify_steps(source, loaded, steps=3)
    assert report.passed and len(report.steps) == 3
    assert all(o.max_abs < 1e-5 for step in report.steps for o in step)


@pytest.mark.parametrize("kind", ["onnx", "tflite"])
def test_a_graph_without_the_record_is_refused_naming_the_input(tmp_path, kind):
    """A graph converted with --io-layout before files kept the record (here: the record
    removed): the source refuses its feeds, and the error says why, not 'the source failed'."""
    source = TINY_CNN
    layout, shapes = "nhwc", ([1, 32, 32, 3], [1, 3, 32, 32])
    if kind == "tflite":
        source = tmp_path / "tiny_nhwc.tflite"
        converter.convert(TINY_CNN, source, target="chromium-litert", io_layout="nhwc")
        layout, shapes = "nchw", shapes[::-1]
    out = tmp_path / "g.webnn"
    converter.convert(source, out, target="coreml", io_layout=layout)
    out.write_text("\n".join(line for line in out.read_text().splitlines()
                             if "#@permuted" not in line))
    r = run("verify", source, "--graph", out)
    assert r.exit_code == 2
    assert r.output.strip() == (
        f"error: {source}: graph input 'image' is {shapes[0]} where the source takes "
        f"{shapes[1]}: the graph takes it transposed and its file does not say how (converted "
        f"with --io-layout before graph files recorded it); convert the graph again (its file "
        f"then records the layout), or verify SOURCE --target T --io-layout L")


def test_bisect_compares_a_permuted_output_in_one_layout(tmp_path):
    """mask [1, 4, 4, 4]: NCHW and NHWC have one shape, so the source's value and the graph's
    are compared, and must be in one layout (else the last op looks wrong)."""
    source = segmenter(tmp_path / "cube.onnx", 4, 4)
    for target in ("coreml", "chromium-litert"):
        graph = converter.convert(source, target=target, io_layout="nhwc")
        assert graph.outputs["mask"].shape == (1, 4, 4, 4)
        assert bisect(source, graph, seed=0) is None
        report = converter.verify(source, graph, oracle="always")
        mask = {o.name: o for o in report.outputs}["mask"]
        assert report.passed and mask.extra["webnnVsF64"] < 1e-5  # the oracle transposed back


def test_an_exported_tflite_of_a_presented_graph_is_judged_in_the_source_layout(models,
                                                                              tmp_path):
    source, _ = models["segmenter"]
    out = tmp_path / "seg.tflite"
    r = run("convert", source, "-o", out, "--target", "chromium-litert", "--io-layout", "nhwc",
            "--verify", "--json")
    assert r.exit_code == 0, r.output
    (opinion,) = json.loads(r.output)["others"].values()
    assert {o["name"]: o["shape"] for o in opinion} == {"mask": [1, 4, 12, 20],
                                                         "score": [1, 4]}
    assert all(o["passed"] and o["maxAbs"] < 1e-4 for o in opinion)
