"""The int4 genai-builder decoder (uint4 MatMulNBits) for chromium-litert and coreml: its
weights kept 4-bit (re-based uint4 -> int4 where the target takes int4), widened to uint8
where it takes no 4-bit dequantizeLinear, or dequantized with --dequantize; the KV cache stays
state through the target's passes, and 32 greedy tokens match ONNX Runtime on the source."""
from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.state.generation import generate_on_onnxruntime
from converter.targets.pipeline import convert_for_target

SOURCE = Path(__file__).resolve().parents[2] / "models" / "tiny-llama" / "int4" / "model.onnx"
PROMPT = [1, 5, 9, 33, 71]
MATMULS = 11  # MatMulNBits in the fixture. All 11 stay int4 for chromium-litert, the two
# 64x64 o_proj weights included (4,096 values: fold_constants keeps a 4-bit dequantizeLinear of
# any size that the target reads 4-bit). coreml takes no 4-bit dequantizeLinear: the size rule
# folds those two into float32, and the other 9 are widened to uint8.
STORED = {"int4": 2 * MATMULS, "uint8": 2 * (MATMULS - 2), None: 0}  # weights and zero points


@pytest.fixture(scope="module")
def reference():
    return generate_on_onnxruntime(SOURCE, PROMPT, 32)


@pytest.mark.parametrize("target, dequantize, stored", [
    ("chromium-litert", False, "int4"),   # re-based: exact, and the backend takes int4
    ("coreml", False, "uint8"),           # widened: coreml takes no 4-bit dequantizeLinear
    ("chromium-litert", True, None),      # --dequantize: float weights only
    ("coreml", True, None),
])
def test_int4_decoder_for_targets_matches_onnxruntime(reference, target, dequantize, stored):
    graph = converter.load_decoder(SOURCE, capacity=40)
    convert_for_target(graph, target, dequantize=dequantize)
    assert converter.check(graph, target) == []
    assert len(graph.state) == 4 and graph.problems() == []
    weights = collections.Counter(o.data_type for o in graph.operands()
                                  if o.producer is None and o.name not in graph.inputs)
    assert weights["uint4"] == 0
    assert weights[stored] == STORED[stored]
    result = converter.generate(graph, PROMPT, 32)
    assert result.tokens == reference.tokens
    for got, want in zip(result.logits, reference.logits):
        assert np.all(np.abs(got - want) <= 1e-4 + 1e-3 * np.abs(want))


def test_check_says_what_happens_to_the_decoders_weights():
    r = CliRunner().invoke(main, ["check", str(SOURCE), "--cache-capacity", "16", "--json",
                                  "-t", "all"])
    # the source graph itself breaks them (uint4, int64); the passes fix that
    assert r.exit_code == 0, r.output
    targets = json.loads(r.output)["targets"]
    plans = {t: collections.Counter((w["action"], w["newType"])
                                    for w in targets[t]["quantizedWeights"])
             for t in ("chromium-litert", "coreml")}
    assert plans == {"chromium-litert": {("re-encode", "int4"): MATMULS},
                     "coreml": {("re-encode", "uint8"): MATMULS}}, plans
    assert all(targets[t]["fixed"] and not targets[t]["violations"]
               for t in ("chromium-litert", "coreml"))
