"""Small 4-bit weights stay 4-bit under a target that reads them so: fold_constants keeps a
dequantizeLinear of uint4/int4 weights of any size when quantized_weights keeps them 4-bit or
re-bases them (uint4 -> int4 for chromium-litert), instead of storing float32 at eight times the
bytes (the tiny q4 fixtures: every matmul weight is 4,096 values or fewer). Without a target,
with --dequantize, or on a target that reads no 4-bit type, the size rule alone decides."""
from __future__ import annotations

import collections
import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.importers.onnx import import_model
from converter.passes import PassContext, run_passes
from converter.targets import load_target
from converter.targets.pipeline import convert_for_target

from .quantized_models import decoder_block

LLAMA_Q4 = "models/optimum-tiny/llama/decoder_model_q4.onnx"


def _small_block():
    """Two MatMulNBits of 32x64 = 2,048 values each (under the 4,096 the size rule keeps)."""
    model, feeds = decoder_block(seed=3, hidden=32, inner=64)
    return import_model(onnx.ModelProto.FromString(model.SerializeToString())), feeds


def _stored(graph) -> collections.Counter:
    return collections.Counter(c.data_type for c in graph.constants.values()
                               if c.constant.fill is None and c.size >= 32 * 64)


@pytest.mark.parametrize("target, dequantize, kept", [
    ("chromium-litert", False, True),   # re-based to int4 next: kept
    ("portable", False, False),         # its constants take no 4-bit type: size rule
    ("coreml", False, False),           # its dequantizeLinear takes no 4-bit type: size rule
    ("chromium-litert", True, False),   # --dequantize: float weights wanted
    (None, False, False),               # no target: the size rule alone
])
def test_fold_constants_keeps_small_4_bit_weights_the_target_reads(target, dequantize, kept):
    graph, _ = _small_block()
    ctx = PassContext(target=load_target(target) if target else None, dequantize=dequantize)
    [(_, result)] = run_passes(graph, ["fold_constants"], ctx)
    dequantizes = [op for op in graph.operations if op.op_type == "dequantizeLinear"]
    assert len(dequantizes) == (2 if kept else 0)
    assert result.counts["kept_quantized"] == (2 if kept else 0)
    assert _stored(graph) == ({"uint4": 2} if kept else {"float32": 2})


def test_small_uint4_weights_become_int4_for_chromium_litert_bit_for_bit():
    """The int4 graph computes exactly what the uint4 one does: q - z == (q - 8) - (z - 8),
    both exact integers, times the same float32 scale, then the same matmul."""
    graph, feeds = _small_block()
    convert_for_target(graph, "chromium-litert")
    assert _stored(graph) == {"int4": 2}
    assert [c.constant.nbytes for c in graph.constants.values()
            if c.data_type == "int4" and c.size == 32 * 64] == [32 * 64 // 2] * 2
    uint4, _ = _small_block()  # as imported: uint4 dequantizeLinear, run on ORT as it is
    assert _stored(uint4) == {"uint4": 2}
    np.testing.assert_array_equal(converter.run(graph, feeds)["y"],
                                  converter.run(uint4, feeds)["y"])


def test_the_q4_llamas_weights_file_holds_int4_for_chromium_litert(tmp_path):
    """Every MatMulNBits weight of the q4 file ([N, K], at most 64x32 values) is stored as
    packed int4 (two values a byte); its default zero point (uint4 8, int4 0... after the
    shift -8 + 8 = 0 is uint4's 8 - 8) is a fill, stored as one number."""
    out = tmp_path / "llama.webnn"
    r = CliRunner().invoke(main, ["convert", LLAMA_Q4, "--target", "chromium-litert",
                                  "--dim", "batch_size=1", "--dim", "sequence_length=4",
                                  "-o", str(out)])
    assert r.exit_code == 0, r.output
    tensors = json.loads(out.with_suffix(".manifest.json").read_text())["tensors"]
    attrs = [{a.name: a.i for a in n.attribute}
             for n in onnx.load(LLAMA_Q4).graph.node if n.op_type == "MatMulNBits"]
    int4 = [t for t in tensors.values() if t["dataType"] == "int4"]
    assert sorted(tuple(t["shape"]) for t in int4) == sorted((a["N"], a["K"]) for a in attrs)
    assert all(t["byteLength"] == t["shape"][0] * t["shape"][1] // 2 for t in int4)
    packed = sum(a["N"] * a["K"] // 2 for a in attrs)
    floats = sum(t["byteLength"] for t in tensors.values() if t["dataType"] == "float32")
    # what is left in float32: the embedding [96, 32], the scales, norms and small constants,
    # not the matmul weights (8 * packed bytes as float32)
    assert floats < 8 * packed
    assert out.with_suffix(".weights").stat().st_size < 30_000  # was 98,468 (float32)
