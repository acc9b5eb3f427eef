"""The accuracy cost of compressed weights (`verify --weights S`, `convert --verify --weights S`,
converter.measure_accuracy): the compressed graph against the FLOAT source on its runtime, its
metrics equal to numpy's on the same outputs, judged by --accuracy or the scheme's default, a
verdict of its own (exit 1 naming the metric), bounds parsed strictly (exit 2, one line)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.errors import ConverterError
from converter.verification.accuracy import measure_accuracy, weights_bytes
from converter.verification.accuracy_bounds import DEFAULT_ACCURACY, parse_accuracy
from converter.verification.accuracy_metrics import class_axis
from converter.verification.core import make_inputs

TINY = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _numpy_metrics(got: list[np.ndarray], want: list[np.ndarray]) -> dict:
    """max abs, max rel, worst cosine, top-1 and top-5 of [batch, classes] outputs, computed
    here with plain numpy."""
    g, w = np.stack(got).astype(np.float64), np.stack(want).astype(np.float64)
    cosines = [float(a.ravel() @ b.ravel() / np.linalg.norm(a) / np.linalg.norm(b))
               for a, b in zip(g, w)]
    gr, wr = g.reshape(-1, g.shape[-1]), w.reshape(-1, w.shape[-1])
    top5 = np.argsort(-gr, axis=1)[:, :5]
    return {"max_abs": np.abs(g - w).max(), "max_rel": (np.abs(g - w) / np.abs(w)).max(),
            "cosine": min(cosines),
            "top1": float(np.mean(gr.argmax(1) == wr.argmax(1))),
            "top5": float(np.mean([wr[i].argmax() in top5[i] for i in range(len(wr))])),
            "classes": len(np.unique(wr.argmax(1)))}


def _both_sides(graph, samples: int):
    options = ort.SessionOptions()  # as the report runs the source: no graph optimization
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(TINY), options, providers=["CPUExecutionProvider"])
    got, want = [], []
    for i in range(samples):
        feeds, _ = make_inputs(graph, i)
        want.append(session.run(None, feeds)[0])
        got.append(converter.run(graph, feeds)["probabilities"])
    return got, want


def test_metrics_equal_numpys_on_the_same_outputs():
    before = weights_bytes(converter.load(TINY))
    graph = converter.convert(TINY, weights="float16")
    report = measure_accuracy(TINY, graph, weights="float16", bytes_before=before, samples=8)
    (out,) = report.outputs
    expected = _numpy_metrics(*_both_sides(graph, 8))
    assert out.max_abs == pytest.approx(expected["max_abs"], rel=1e-9)
    assert out.max_rel == pytest.approx(expected["max_rel"], rel=1e-9)
    assert out.cosine == pytest.approx(expected["cosine"], abs=1e-12)
    assert (out.top1, out.top5, out.rows) == (expected["top1"], expected["top5"], 8)
    # seeded inputs in [0, 1) never move tiny_cnn's choice: said, since top-1 then proves little
    assert out.source_classes == expected["classes"] == 1
    assert report.notes == ["the source ranked one class first in all 8 rows of probabilities: "
                            "its top-1/top-5 agreement says little (give inputs that move it: "
                            "--input/--inputs)"]
    # the float16 pass stores the three big weights (3,488 bytes of float32) at half size
    assert (report.bytes_before, report.bytes_after) == (3592, 3592 - 3488 // 2)
    assert [c.metric for c in report.checks] == ["cosine"] and report.passed
    assert report.bounds_from == "the default for float16 weights"


def test_a_perturbed_weight_fails_top1_named_and_counted_as_numpy_does():
    """The fc weights and bias negated: the logits' order reverses, the top class changes."""
    from converter.ir.operand import ConstantData

    graph = converter.convert(TINY, weights="float16")
    for name in ("fc_w_float16", "fc_b"):  # fc_w is stored as float16 behind a cast
        operand = graph.constants[name]
        operand.constant = ConstantData(operand.data_type, operand.shape,
                                        array=-np.asarray(operand.constant.numpy()))
    report = measure_accuracy(TINY, graph, weights="float16", bytes_before=3592, samples=8,
                              accuracy="top1>=0.99,cosine>=0.5")
    (out,) = report.outputs
    expected = _numpy_metrics(*_both_sides(graph, 8))
    assert out.top1 == expected["top1"] < 0.99 and out.cosine == pytest.approx(
        expected["cosine"], abs=1e-12)
    assert not report.passed
    failed = {c.metric for c in report.failures()}
    assert "top1" in failed, report.lines()
    assert report.lines()[-1].startswith("accuracy: fail (top1 of probabilities")


def test_an_impossible_bound_fails_with_exit_1_naming_the_metric():
    r = _run("verify", TINY, "--weights", "float16", "--samples", 2,
             "--accuracy", "cosine>=1.0000001")
    assert r.exit_code == 1, r.output
    lines = r.stdout.splitlines()
    assert lines[-1].startswith("accuracy: fail (cosine of probabilities 0.99999"), lines
    assert "< 1.0000001)" in lines[-1]
    # the float policy's own verdict on the uncompressed conversion is unchanged: a pass
    assert "pass" in lines and "bounds (--accuracy): cosine>=1.0000001" in lines


def test_verify_json_carries_sizes_metrics_and_default_bounds():
    from converter.schemas import validate

    r = _run("verify", TINY, "--weights", "float16", "--samples", 3, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    validate(doc, "verify-report", "verify --json")
    acc = doc["accuracy"]
    assert acc["weightsBytes"] == {"before": 3592, "after": 1848, "ratio": 1848 / 3592}
    assert acc["samples"] == 3 and acc["bounds"] == {"cosine": "cosine>=0.9999"}
    assert acc["boundsFrom"] == "the default for float16 weights"
    (out,) = acc["outputs"]
    assert out["name"] == "probabilities" and out["top1"] == 1.0 and out["classAxis"] == 1
    assert acc["checks"][0]["metric"] == "cosine" and acc["verdict"] == "pass"
    assert doc["verdict"] == "pass"  # the float conversion, by the float policy


def test_convert_verify_writes_nothing_when_the_accuracy_misses(tmp_path):
    out = tmp_path / "m.webnn"
    r = _run("convert", TINY, "-o", out, "--weights", "float16", "--verify", "--samples", 2,
             "--accuracy", "top1>=0.99,max_abs<=1e-12")
    assert r.exit_code == 1, r.output
    assert "max_abs of probabilities" in r.stdout.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []
    r = _run("convert", TINY, "-o", out, "--weights", "float16", "--verify", "--samples", 2)
    assert r.exit_code == 0 and out.is_file(), r.output


def test_the_api_raises_accuracy_error_and_writes_nothing(tmp_path):
    with pytest.raises(converter.AccuracyError, match="cosine of probabilities"):
        converter.convert(TINY, tmp_path / "m.webnn", weights="float16", verify=True,
                          accuracy="cosine>=1.0000001", samples=2)
    assert list(tmp_path.iterdir()) == []
    report = converter.measure_accuracy(TINY, "float16", samples=2)
    assert report.passed and report.ratio == pytest.approx(1848 / 3592)


@pytest.mark.parametrize("text, says", [
    ("foo>=1", "unknown accuracy metric 'foo'"), ("cosine<=0.9", "cosine takes a bound >="),
    ("max_abs>=0.1", "max_abs takes a bound <="), ("cosine>0.9", "cosine takes a bound >="),
    ("cosine", "cosine takes a bound >="), ("cosine>=", "finite number"),
    ("cosine>=nan", "finite number"), ("top1>=inf", "finite number"),
    ("top1>=1_0", "finite number"), ("cosine>=0.9,,top1>=1", "empty accuracy bound"),
    ("cosine>=0.9,cosine>=0.8", "bounded twice"), (">=0.9", "malformed accuracy bound"),
    ("", "no accuracy bound"), ("cosine>=0.9;top1>=1", "finite number"),
])
def test_a_malformed_bound_is_one_error_line_exit_2(text, says):
    with pytest.raises(ConverterError, match=None) as e:
        parse_accuracy(text)
    assert says in e.value.what
    r = _run("verify", TINY, "--weights", "float16", "--accuracy", text)
    assert r.exit_code == 2 and "Traceback" not in r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "--accuracy" in errors[0], r.output


def test_bounds_parse_to_metric_direction_and_number():
    assert parse_accuracy(" cosine >= 0.999 , top1>=0.99,max_rel<=1e-2") == {
        "cosine": (">=", 0.999), "top1": (">=", 0.99), "max_rel": ("<=", 0.01)}


@pytest.mark.parametrize("args", [("--accuracy", "cosine>=0.9"), ("--samples", "4")])
def test_accuracy_options_need_weights(args):
    r = _run("verify", TINY, *args)
    assert r.exit_code == 2 and "--weights" in r.output.splitlines()[-1], r.output


def test_a_given_bound_that_fits_no_output_is_an_error():
    """top5 needs more than 5 classes: a [1, 10] output has them, tokens need a decoder."""
    r = _run("verify", TINY, "--weights", "float16", "--samples", 1, "--accuracy", "tokens>=1")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "needs decoded tokens" in r.stderr.strip().splitlines()[-1], r.stderr


@pytest.mark.parametrize("name, shape, axis", [
    ("probabilities", (1, 10), 1), ("y", (4, 1000), 1), ("y", (1, 1000, 1, 1), 1),
    ("y", (1, 1, 7), 2), ("logits", (1, 5, 256), 2), ("LM/logits", (2, 3), 1),
    ("y", (1, 3, 8, 8), None), ("y", (1, 1), None), ("y", (10,), None),
    ("logits", (1, 5, 1), None), ("y", (8, 4, 4), None),
])
def test_the_classifier_rule(name, shape, axis):
    assert class_axis(name, shape, "f") == axis
    assert class_axis(name, shape, "i") is None  # integer outputs are not scores


def test_every_scheme_has_a_default_that_parses():
    from converter.passes.float16_weights import WEIGHT_TYPES

    for scheme in WEIGHT_TYPES[1:]:
        assert parse_accuracy(DEFAULT_ACCURACY[scheme])


def test_given_inputs_are_one_sample(tmp_path):
    rng = np.random.default_rng(3)
    np.save(tmp_path / "x.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    r = _run("verify", TINY, "--weights", "float16", "--input", f"image={tmp_path / 'x.npy'}",
             "--json")
    assert r.exit_code == 0, r.output
    acc = json.loads(r.stdout)["accuracy"]
    assert (acc["samples"], acc["inputs"]) == (1, "the inputs given")


def _conv_model(tmp_path, output: str = "y") -> Path:
    """A conv whose output [1, 4, 6, 6] is no classifier (three axes after the batch > 1)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((4, 3, 3, 3))
                                .astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], [output], pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 4, 6, 6])], [w])
    source = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    return source


def test_top1_asked_of_an_output_that_is_no_classifier_is_an_error(tmp_path):
    source = _conv_model(tmp_path)
    r = _run("verify", source, "--weights", "float16", "--samples", 2, "--accuracy",
             "cosine>=0.999,top1>=0.99")
    assert r.exit_code == 2 and "Traceback" not in r.output
    line = r.stderr.strip().splitlines()[-1]
    assert "top1>=0.99 needs a classifier-shaped output" in line, line
    ok = _run("verify", source, "--weights", "float16", "--samples", 2, "--json")
    assert ok.exit_code == 0, ok.output  # the default float16 bound: cosine alone
    (out,) = json.loads(ok.stdout)["accuracy"]["outputs"]
    assert out["top1"] is None and out["classAxis"] is None


def test_a_hostile_output_name_prints_inert(tmp_path):
    """An output name is the model's: its control characters never reach the terminal."""
    source = _conv_model(tmp_path, "y\x1b]8;;http://x\x07\x1b[2J")
    r = _run("verify", source, "--weights", "float16", "--samples", 1, "--accuracy",
             "cosine>=1.0000001")
    assert r.exit_code == 1, r.output
    assert "\x1b" not in r.output and "\x07" not in r.output
    assert r.stdout.splitlines()[-1].startswith("accuracy: fail (cosine of y")
