"""The public ONNX and TFLite models that convert (models/zoo.json, fetched with pip and
sha256-checked) run in Chromium's WebNN after `--target chromium-litert`, and match their
source runtime (ONNX Runtime or LiteRT) within the whole-model tolerances."""
import json
from pathlib import Path

import pytest

import converter
from converter.zoo.fetch import fetch_model
from converter.targets import load_target
from converter.targets.pipeline import convert_for_target

ZOO = json.loads((Path(__file__).resolve().parents[2] / "models" / "zoo.json").read_text())
# The int8 wake-word models carry TFLite resource variables as graph state: they are stepped 20
# times in Chromium against LiteRT in test_wake_words_in_chromium.py.
STATEFUL = ("alexa", "hey_jarvis", "hey_mycroft", "okay_nabu")
CONVERTIBLE = {m["id"]: m for m in ZOO["models"]
               if m["expect"] == "verified" and m["id"] not in STATEFUL}


@pytest.mark.parametrize("model_id", sorted(CONVERTIBLE))
def test_public_model_in_chromium(model_id, browser_limits):
    entry = CONVERTIBLE[model_id]
    source = fetch_model(entry["source"])
    shapes = {k: v for k, v in entry.get("inputShapes", {}).items() if v} or None
    graph = converter.load(source, input_shapes=shapes)
    convert_for_target(graph, load_target("chromium-litert"))
    report = converter.verify(source, graph, seed=0, runtime="chromium")
    assert report.graph_runtime == "chromium"
    for out in report.outputs:
        assert out.passed, out.to_json()
