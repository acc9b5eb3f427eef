"""ONNX -> WebNN -> TFLite on whole models: models/tiny_cnn.onnx, the onnx package's nine
light_* architectures with seeded random weights, and the public ONNX models of
models/zoo.json. The exported .tflite runs on LiteRT (with XNNPACK, as LiteRT runs by default)
and must match ONNX Runtime on the ONNX source within the whole-model tolerance (float32:
atol 1e-4, rtol 1e-3, cosine >= 0.9999; integers exactly). All of them use only ops TFLite
can express.

Their graphs are nchw, as ONNX is: the export keeps activations nhwc between operations, so
a model transposes its input once and its result once, plus wherever a reshape, a softmax
over channels or a local response normalization needs nchw order back."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.exporters.tflite import export_problems, to_tflite
from converter.zoo.fetch import fetch_model
from converter.verification.parity import compare
from converter.testing.light_models import LIGHT_MODELS, light_model
from converter.verification.core import make_inputs

from .helpers import operator_codes, run_litert

TINY_CNN = Path(__file__).resolve().parents[3] / "models" / "tiny_cnn.onnx"
# TRANSPOSE operators in each export: 2 is the input in and the result out. The rest come
# from operations that read nchw order as such: the local response normalizations of
# alexnet, zfnet512 and inception_v1 (imported as ops across the channel axis), densenet121's
# final reduceMean, and shufflenet's 16 channel shuffles (a reshape and transpose, 3 each).
TRANSPOSES = {"tiny_cnn": 2, "bvlc_alexnet": 12, "densenet121": 4, "inception_v1": 12,
              "inception_v2": 2, "resnet50": 2, "shufflenet": 50, "squeezenet": 2, "vgg19": 2,
              "zfnet512": 12}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("light")


def _onnx_runtime(path: Path, feeds: dict) -> dict:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    known = {i.name for i in session.get_inputs()}
    return dict(zip(names, session.run(names, {k: v for k, v in feeds.items() if k in known})))


def _exported_model_matches_the_source(name: str, source: Path) -> None:
    graph = converter.load(source)
    assert export_problems(graph) == []
    data = to_tflite(graph)
    feeds, _ = make_inputs(graph, seed=0)
    want = _onnx_runtime(source, feeds)
    got = run_litert(data, feeds)
    for key, expected in want.items():
        result = compare(key, got[key], expected)
        assert result.passed, result.to_json()
        assert result.max_abs <= 1e-4 + 1e-3 * float(np.abs(expected).max())
    ops = Counter(operator_codes(data))
    assert ops["TRANSPOSE"] == TRANSPOSES[name], ops


def test_tiny_cnn():
    _exported_model_matches_the_source("tiny_cnn", TINY_CNN)


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model(name, folder):
    _exported_model_matches_the_source(name, light_model(name, folder, seed=0))


ZOO = json.loads((Path(__file__).resolve().parents[3] / "models" / "zoo.json").read_text())
PUBLIC_ONNX = {m["id"]: m for m in ZOO["models"] if m["format"] == "onnx"}


@pytest.mark.parametrize("model_id", sorted(PUBLIC_ONNX))
def test_public_onnx_model(model_id):
    # The public ONNX models of models/zoo.json (wake-word, voice-activity with LSTMs, OCR
    # direction), fetched from their pip packages and checked against their sha256.
    entry = PUBLIC_ONNX[model_id]
    source = fetch_model(entry["source"])
    graph = converter.load(source, input_shapes=entry.get("inputShapes"))
    assert export_problems(graph) == []
    feeds, _ = make_inputs(graph, seed=0)
    want = _onnx_runtime(source, feeds)
    got = run_litert(to_tflite(graph), feeds)
    for key, expected in want.items():
        result = compare(key, got[key], expected, data_type=graph.outputs[key].data_type)
        assert result.passed, result.to_json()
