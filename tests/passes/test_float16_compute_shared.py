"""float16_compute and a constant read by a float16 op and by an op kept float32 (a
layerNormalization's scale that an add also reads): stored once, as float32, its float16
readers reading it through one cast; with --weights float16, once as float16, with no cast
back to float16. Both copies stay only where a cast cannot serve (a constant under
float16_weights.MIN_BYTES, a slot the target wants constant), and the notes say why. Each
graph is written, read back, and verified against ONNX Runtime on the float32 source."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import converter
from converter.targets.pipeline import convert_for_target

from .float16_compute_models import Family

ROOT = Path(__file__).parents[2]


def _shared(folder: Path, size: int = 64) -> Path:
    """x @ w -> layerNormalization(scale g) -> + g: g read by a float32 op and a float16 op."""
    rng = np.random.default_rng(0)
    n = helper.make_node
    return Family("shared", [n("MatMul", ["x", "w"], ["m"]),
                             n("LayerNormalization", ["m", "g"], ["l"], axis=-1),
                             n("Add", ["l", "g"], ["y"])],
                  {"x": (4, size)}, {"y": (4, size)},
                  {"w": rng.standard_normal((size, size)).astype(np.float32),
                   "g": rng.standard_normal(size).astype(np.float32)}, set(), set()
                  ).save(folder)


def _written(graph, folder: Path) -> tuple[dict[str, tuple[str, int]], int]:
    """The graph saved as .webnn: the tensors its weights manifest places in the weights file
    (type, bytes), checked to be all the file holds past its header, and the file's size."""
    out = folder / "out.webnn"
    converter.save(graph, out)
    tensors = json.loads(out.with_suffix(".manifest.json").read_text())["tensors"]
    size = out.with_suffix(".weights").stat().st_size
    assert size == max(t["byteOffset"] + t["byteLength"] for t in tensors.values())
    assert size == min(t["byteOffset"] for t in tensors.values()) + \
        sum(t["byteLength"] for t in tensors.values())  # nothing between the tensors
    assert {n for n in converter.load(out).constants} == set(tensors)
    return {n: (t["dataType"], t["byteLength"]) for n, t in tensors.items()}, size


def _notes(report) -> list[str]:
    return dict(report.passes)["float16_compute"].notes


def _reader(graph, op_type: str):
    return next(op for op in graph.operations if op.op_type == op_type)


@pytest.mark.parametrize("target", ["portable", "chromium-litert"])
def test_stored_once_as_float32_and_cast_for_the_float16_reader(tmp_path, target):
    """Before: g float32 (256 bytes) and g_float16 (128 bytes), an 8,584-byte weights file
    (now 8,456)."""
    source = _shared(tmp_path)
    graph = converter.load(source)
    notes = _notes(convert_for_target(graph, target, compute="float16"))
    assert ("stored once as float32, cast to float16 for its float16 readers (read by ops "
            "of both types): g") in notes, notes
    assert not any(n.startswith("stored both") for n in notes), notes
    norm, add = _reader(graph, "layerNormalization"), _reader(graph, "add")
    assert norm.inputs[1].name == "g" and norm.inputs[1].data_type == "float32"
    cast = add.inputs[1].producer  # the float16 add reads g through one cast
    assert cast.op_type == "cast" and cast.inputs[0] is norm.inputs[1]
    assert add.outputs[0].data_type == "float16"
    constants, size = _written(graph, tmp_path)
    assert constants == {"w": ("float16", 8192), "g": ("float32", 256)}
    assert size == 8 + 8192 + 256  # the file's 8-byte header, w, g
    report = converter.verify(source, graph)
    assert report.passed and report.outputs[0].max_abs < 1e-2, report


def test_with_float16_weights_the_one_copy_is_float16_and_no_cast_goes_back(tmp_path):
    """Before: g_float16 and g_float16_1, the same 128 bytes twice, an 8,456-byte weights
    file (now 8,328)."""
    source = _shared(tmp_path)
    graph = converter.convert(source, target="chromium-litert", compute="float16",
                              weights="float16")
    constants, size = _written(graph, tmp_path)
    assert constants == {"w": ("float16", 8192), "g_float16": ("float16", 128)}
    assert size == 8 + 8192 + 128
    half = graph.constants["g_float16"]
    assert _reader(graph, "add").inputs[1] is half  # read as stored: no cast back
    widened = _reader(graph, "layerNormalization").inputs[1]
    assert widened.producer.op_type == "cast" and widened.producer.inputs[0] is half
    assert sum(op.op_type == "cast" and op.attrs.get("dataType") == "float16"
               and op.inputs[0] is widened for op in graph.operations) == 0
    assert converter.verify(source, graph).passed


def _wanting_add_constant(folder: Path) -> Path:
    """chromium-litert's target file, add's second operand wanted constant."""
    doc = json.loads((ROOT / "converter" / "targets" / "data" / "chromium-litert.json")
                     .read_text())
    doc["webnn-converter"]["name"] = "constant-add"
    doc["webnn-converter"]["constantOperands"] = {"add": ["b"]}
    path = folder / "constant-add.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("case, size, why", [
    ("small", 32, "under 256 bytes"),
    ("wanted constant", 64, "read where constant-add wants a constant: add 'Add_2/add' b"),
])
def test_both_copies_stay_where_a_cast_cannot_serve(tmp_path, case, size, why):
    source = _shared(tmp_path, size)
    target = _wanting_add_constant(tmp_path) if case == "wanted constant" else "chromium-litert"
    graph = converter.load(source)
    notes = _notes(convert_for_target(graph, str(target), compute="float16"))
    assert (f"stored both as float32 and float16 (read by ops of both types): g ({why})"
            in notes), notes
    add = _reader(graph, "add")
    assert add.inputs[1].is_constant and add.inputs[1].data_type == "float16"
    constants, _ = _written(graph, tmp_path)
    assert constants["g"] == ("float32", 4 * size)
    assert constants[add.inputs[1].name] == ("float16", 2 * size)
    assert converter.verify(source, graph).passed
