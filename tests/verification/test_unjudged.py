"""A TFLite model whose own runtime cannot load it (a MediaPipe custom op LiteRT has no kernel
for) converts, and verify says plainly that no source runtime can judge it: the verdict
"unjudged: no source runtime", exit 3, the graph checked against its float64 evaluation only."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.errors import ConversionWarning, NoSourceRuntimeError
from converter.runtimes.litert import run_litert
from converter.testing.tflite_fixtures import TfliteBuilder
from converter.verification.core import UNJUDGED, verify

from ..importers.tflite import mediapipe_reference as ref


def _landmarks_model(path):
    """MediaPipe's TransformLandmarks (version 2): landmarks [1, 5, 3] moved by a 4x4 matrix."""
    b = TfliteBuilder()
    x, m = b.input("landmarks", [1, 5, 3]), b.input("matrix", [1, 4, 4])
    y = b.tensor("moved", [1, 5, 3])
    b.op("CUSTOM:TransformLandmarks", [x, m], [y], version=2)
    path.write_bytes(b.build([y]))
    return path


def test_litert_without_the_kernel_is_no_source_runtime(tmp_path):
    path = _landmarks_model(tmp_path / "lm.tflite")
    with pytest.raises(NoSourceRuntimeError) as e:
        run_litert(path, {})
    assert "no kernel for the model's custom op TransformLandmarks" in e.value.line()


def test_verify_says_unjudged_and_checks_the_graph_against_float64(tmp_path):
    path = _landmarks_model(tmp_path / "lm.tflite")
    report = verify(path, seed=0)
    assert report.verdict == UNJUDGED and not report.passed
    assert "TransformLandmarks" in report.unjudged
    (moved,) = report.outputs
    assert moved.passed and moved.extra["decidedBy"] == "webnn vs f64 (no source runtime)"
    # the graph on the executor is MediaPipe's kernel (numpy by hand), up to float32 rounding
    feeds, _ = converter.verification.core.make_inputs(converter.load(path), 0)
    got = converter.run(converter.load(path), feeds)["moved"]
    want = ref.transform_landmarks(feeds["landmarks"], feeds["matrix"], 2, None, 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    text = str(report).splitlines()
    assert text[-1] == "unjudged: no source runtime" and text[0] == "webnn-onnx vs float64 oracle"
    assert not any(line.startswith("hint:") for line in text)


def test_verify_cli_exits_3_and_its_json_follows_the_schema(tmp_path):
    from converter.schemas import validate

    path = _landmarks_model(tmp_path / "lm.tflite")
    result = CliRunner().invoke(main, ["verify", str(path), "--json"])
    assert result.exit_code == 3, result.output
    out = json.loads(result.output)
    assert out["verdict"] == UNJUDGED and out["passed"] is False and "hint" not in out
    validate(out, "verify-report", "verify --json")


def test_convert_verify_writes_the_graph_and_exits_3(tmp_path):
    path = _landmarks_model(tmp_path / "lm.tflite")
    out = tmp_path / "out" / "lm.webnn"
    out.parent.mkdir()
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(out), "--verify"])
    assert result.exit_code == 3, result.output
    assert out.exists() and "unjudged: no source runtime" in result.output


def test_convert_api_with_verify_warns_and_returns_the_graph(tmp_path):
    path = _landmarks_model(tmp_path / "lm.tflite")
    with pytest.warns(ConversionWarning, match="unjudged: no source runtime"):
        graph = converter.convert(path, tmp_path / "lm.webnn", verify=True)
    assert (tmp_path / "lm.webnn").exists() and "moved" in graph.outputs
