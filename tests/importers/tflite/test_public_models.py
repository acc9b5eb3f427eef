"""The public TFLite models of models/zoo.json (fetched from their pip packages, sha256-checked
at test time): each imports; those without control flow or variables match LiteRT within the
whole-model tolerances; the stateful ones verify step by step (test_variables.py).

Which is which (write it down; a change here is a change in what the importer supports):
  verified:     face_detection_back, face_detection_front, face_detection_full_range,
                face_detection_full_range_sparse (DENSIFY), face_detection_short_range,
                face_landmark, iris_landmark, selfie_segmentation and
                selfie_segmentation_landscape (MediaPipe's Convolution2DTransposeBias)
  stateful:     alexa, hey_jarvis, hey_mycroft, okay_nabu (pymicro-wakeword's int8 streaming
                models: resource variables carry the audio stream between invocations, and
                CALL_ONCE's init subgraph sets them; verified over 20 steps in test_variables.py)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from converter.runtimes.execute import run
from converter.zoo.fetch import fetch_model
from converter.importers.tflite import import_tflite
from converter.verification.parity import compare
from converter.runtimes.litert import run_litert

ZOO = json.loads((Path(__file__).resolve().parents[3] / "models" / "zoo.json").read_text())
TFLITE = {m["id"]: m for m in ZOO["models"] if m["format"] == "tflite"}
VERIFIED = ("face_detection_back", "face_detection_front", "face_detection_full_range",
            "face_detection_full_range_sparse", "face_detection_short_range", "face_landmark",
            "iris_landmark", "selfie_segmentation", "selfie_segmentation_landscape")
STATEFUL = ("alexa", "hey_jarvis", "hey_mycroft", "okay_nabu")


def test_every_public_tflite_model_is_classified():
    assert sorted(TFLITE) == sorted(VERIFIED + STATEFUL)


def _logits(graph, output: str) -> str | None:
    """The tensor a final sigmoid reads, if the output is one: a segmentation mask of random
    noise is ~1e-9 everywhere, so its logits are what can be compared."""
    producer = graph.outputs[output].producer
    return producer.inputs[0].name if producer.op_type == "sigmoid" else None


@pytest.mark.parametrize("model_id", VERIFIED)
def test_public_model_matches_litert(model_id):
    entry = TFLITE[model_id]
    source = fetch_model(entry["source"])
    graph = import_tflite(source, input_shapes=entry.get("inputShapes"))
    rng = np.random.default_rng(0)
    feeds = {name: rng.random(x.shape, dtype=np.float64).astype(np.float32)  # images [0, 1)
             for name, x in graph.inputs.items()}
    masks = {o: _logits(graph, o) for o in graph.outputs if _logits(graph, o)}
    for logits in masks.values():
        graph.set_output(logits, graph.operand(logits))
    want = run_litert(source, feeds, tensors=list(masks.values()))
    got = run(graph, feeds)
    assert set(want) == set(got)
    for name, expected in want.items():
        result = compare(name, got[name], expected)
        if name in masks:  # the sigmoid of logits compared under the policy: near zero
            assert result.max_abs <= 1e-4, result.to_json()
        else:
            assert result.passed, result.to_json()


@pytest.mark.parametrize("model_id", ["face_detection_back", "face_detection_front",
                                      "face_detection_full_range", "face_landmark",
                                      "iris_landmark", "selfie_segmentation"])
def test_public_cnn_imports_without_a_transpose(model_id):
    entry = TFLITE[model_id]
    graph = import_tflite(fetch_model(entry["source"]), input_shapes=entry.get("inputShapes"))
    histogram = graph.op_histogram()
    assert "transpose" not in histogram
    assert histogram["conv2d"] > 20
    assert all(op.attrs["inputLayout"] == "nhwc" for op in graph.operations
               if op.op_type in ("conv2d", "convTranspose2d"))
