"""Issue 27 point 5: a report says when its pass proves little (outputs all ~0 or constant on
the inputs used), prints its bounds in words (`--ulp 0` is a bound of 0 ULP, not `{}`), and
says when the float64 oracle passed an output outside the bounds the user gave."""
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
from converter.verification.parity import Bounds
from converter.schemas import validate

TINY_CNN = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _elementwise(path: Path, nodes, consts) -> Path:
    """x [2, 8] float -> `nodes` -> y [2, 8]."""
    graph = H.make_graph(nodes, "m", [H.make_tensor_value_info("x", TP.FLOAT, [2, 8])],
                         [H.make_tensor_value_info("y", TP.FLOAT, [2, 8])],
                         [nh.from_array(np.array(v, np.float32), n) for n, v in consts.items()])
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _vanishing(path):  # sigmoid(10 x - 40) on x in [0, 1): at most ~1e-13, a dark mask
    return _elementwise(path, [H.make_node("Mul", ["x", "ten"], ["a"]),
                               H.make_node("Sub", ["a", "forty"], ["b"]),
                               H.make_node("Sigmoid", ["b"], ["y"])],
                        {"ten": 10.0, "forty": 40.0})


def _constant(path):  # x * 0 + 0.5 everywhere
    return _elementwise(path, [H.make_node("Mul", ["x", "zero"], ["a"]),
                               H.make_node("Add", ["a", "half"], ["y"])],
                        {"zero": 0.0, "half": 0.5})


@pytest.mark.parametrize("make,said", [
    (_vanishing, "every value is within the absolute tolerance of zero (largest |value| "),
    (_constant, "every value is 0.5 on these inputs, so the comparison tells little")])
def test_a_pass_that_proves_little_says_so(tmp_path, make, said):
    path = make(tmp_path / "m.onnx")
    report = converter.verify(path)
    assert report.passed and len(report.warnings) == 1 and said in report.warnings[0]
    r = run("verify", path)
    assert r.exit_code == 0 and f"warning: output 'y': {said}" in r.output
    out = json.loads(run("verify", path, "--json").output)
    validate(out, "verify-report", "verify --json")
    assert said in out["warnings"][0]


def test_an_ordinary_pass_has_no_warning():
    report = converter.verify(TINY_CNN)
    assert report.passed and report.warnings == []
    assert "warnings" not in report.to_json()


def test_bounds_are_printed_in_words_and_ulp_0_is_a_bound():
    from converter.verification.notes import bounds_in_words

    assert bounds_in_words(Bounds(ulp=0)) == "within 0 ULP"
    assert bounds_in_words(Bounds(exact=True)) == "exact"
    assert bounds_in_words(Bounds(atol=1e-4, rtol=1e-3, cosine=0.9999)) == \
        "|got - want| <= 0.0001 + 0.001 * |want|, cosine >= 0.9999"
    r = run("verify", TINY_CNN)
    assert "bounds: probabilities |got - want| <= 0.0001 + 0.001 * |want|, cosine >= 0.9999" \
        in r.output
    out = json.loads(run("verify", TINY_CNN, "--ulp", "0", "--json").output)
    assert out["outputs"][0]["bounds"] == {"ulp": 0}


def test_the_oracle_passing_an_output_outside_an_explicit_bound_is_said():
    report = converter.verify(TINY_CNN, ulp=0)
    (result,) = report.outputs
    assert result.max_ulp > 0  # the plain comparison is outside 0 ULP ...
    assert result.passed  # ... and the float64 oracle's rules pass it
    (note,) = report.warnings
    assert note.startswith("output 'probabilities' is outside the bounds you gave (--ulp 0: "
                           "within 0 ULP) and passes by the float64 oracle (webnn vs f64")
    assert note.endswith("--oracle never holds the bounds as given")
    held = converter.verify(TINY_CNN, ulp=0, oracle="never")
    assert not held.passed and held.warnings == []
    assert converter.verify(TINY_CNN, atol=1e-3).warnings == []  # within it: nothing to say
