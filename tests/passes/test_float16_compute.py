"""float16_compute (`convert --compute float16`): each op computes in float16 where the target
takes its float16 form, the graph's inputs and outputs staying float32 (one cast each way),
the float32 constants those ops read stored as float16; normalizations, softmax and summing
reductions stay float32, as do ops a target lacks float16 for. Swept over one small ONNX
model per op family, on the portable and chromium-litert targets, each graph judged against
ONNX Runtime on the float32 source by the float16 bounds (|got - want| <= 1e-2 + 1e-2 |want|)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import converter
from converter.errors import ConverterError
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target

from .float16_compute_models import families

ROOT = Path(__file__).parents[2]
FAMILIES = {f.name: f for f in families()}


def _types(graph, op_types) -> dict[str, set[str]]:
    """The result types of the graph's ops of each type in `op_types`."""
    found: dict[str, set[str]] = {}
    for op in graph.operations:
        if op.op_type in op_types:
            found.setdefault(op.op_type, set()).add(op.outputs[0].data_type)
    return found


@pytest.mark.parametrize("target", ["portable", "chromium-litert"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_op_family_computes_in_float16_within_float16_bounds(name, target, tmp_path):
    family = FAMILIES[name]
    source = family.save(tmp_path)
    graph = converter.convert(source, target=target, compute="float16")
    assert not check(graph, target)
    # the interface stays float32
    assert {o.data_type for o in graph.inputs.values()} == {"float32"}
    assert {o.data_type for o in graph.outputs.values()} == {"float32"}
    types = _types(graph, family.float16 | family.float32)
    assert types == {**{t: {"float16"} for t in family.float16},
                     **{t: {"float32"} for t in family.float32 if t != "greater"},
                     **({"greater": {"uint8"}} if "greater" in family.float32 else {})}, types
    if name == "compare_where":  # the comparison reads the float32 inputs as they are
        assert [x.data_type for x in graph.operations[0].inputs] == ["float32", "float32"]
    # every float32 constant an op reads in float16 is stored as float16
    for op in graph.operations:
        if op.outputs[0].data_type == "float16" and op.op_type != "cast":
            assert all(x.data_type != "float32" for x in op.inputs if x is not None), op
    casts = [op for op in graph.operations if op.op_type == "cast"]
    assert casts, "no boundary casts"
    report = converter.verify(source, graph)
    assert report.passed, "\n".join(report.lines())
    bounds = " ".join(report.lines())
    assert "computed in float16 inside the graph" in bounds  # judged by the float16 bounds


def test_inputs_cast_once_and_outputs_cast_back_once(tmp_path):
    """A graph input read by two float16 ops is cast once; the output keeps its name."""
    source = FAMILIES["elementwise"].save(tmp_path)
    assert "cast" not in converter.convert(source).op_histogram()  # without asking: float32
    graph = converter.convert(source, compute="float16")
    casts = [op for op in graph.operations if op.op_type == "cast"]
    to_half = [op for op in casts if op.attrs["dataType"] == "float16"]
    to_full = [op for op in casts if op.attrs["dataType"] == "float32"]
    assert sorted(op.inputs[0].name for op in to_half) == ["x", "z"]
    assert len(to_full) == 1 and graph.outputs["y"] is to_full[0].output
    assert to_full[0].output.name == "y"


def _narrowed(tmp_path, drop) -> Path:
    """chromium-litert's file with float16 taken out of the operands `drop` says."""
    doc = json.loads((ROOT / "converter" / "targets" / "data" / "chromium-litert.json")
                     .read_text())
    for op, limits in doc.items():
        if op == "webnn-converter" or not isinstance(limits, dict):
            continue
        entries = [(None, limits)] if "dataTypes" in limits else [
            (operand, e) for operand, e in limits.items() if isinstance(e, dict)]
        for operand, entry in entries:
            if "dataTypes" in entry and drop(op, operand):
                entry["dataTypes"] = [t for t in entry["dataTypes"] if t != "float16"]
    doc["webnn-converter"]["name"] = "narrowed"
    path = tmp_path / "narrowed.json"
    path.write_text(json.dumps(doc))
    return path


def test_op_a_target_lacks_float16_for_stays_float32_with_casts(tmp_path):
    """conv2d without float16 (a target file narrowed by hand): both conv2d stay float32,
    read through casts from the float16 ops around them, and the notes list them."""
    target = _narrowed(tmp_path, lambda op, operand: op == "conv2d")
    source = ROOT / "models" / "tiny_cnn.onnx"
    graph = converter.load(source)
    report = convert_for_target(graph, str(target), compute="float16")
    assert _types(graph, {"conv2d", "relu", "gemm", "maxPool2d"}) == {
        "conv2d": {"float32"}, "relu": {"float16"}, "gemm": {"float16"},
        "maxPool2d": {"float16"}}
    for op in graph.operations:
        if op.op_type == "conv2d":  # its float32 result goes to float16 ops through a cast
            assert {u.op.op_type for u in op.output.uses()} == {"cast"}
    notes = dict(report.passes)["float16_compute"].notes
    assert any(n.startswith("kept float32 (narrowed's conv2d takes no float16 input)")
               and n.count("conv2d '") == 2 for n in notes), notes
    assert not check(graph, str(target))
    assert converter.verify(source, graph).passed


def test_int8_weights_dequantize_to_float16():
    """WebNN's dequantizeLinear gives its scale's type: with --weights int8 the scales are
    stored as float16 and the weights come out float16, read by float16 conv2d and gemm."""
    source = ROOT / "models" / "tiny_cnn.onnx"
    graph = converter.convert(source, target="chromium-litert", weights="int8",
                              compute="float16")
    dq = [op for op in graph.operations if op.op_type == "dequantizeLinear"]
    assert len(dq) == 3
    for op in dq:
        assert [x.data_type for x in op.inputs if x is not None] == ["int8", "float16", "int8"]
        assert op.output.data_type == "float16"
        assert {u.op.op_type for u in op.output.uses()} <= {"conv2d", "gemm"}


def test_accuracy_against_the_float_source():
    """measure_accuracy (verify --weights float16 --compute float16): the float16-computed
    tiny_cnn against ONNX Runtime on the float source, cosine >= 0.9999 over 4 inputs, and
    the report says the graph computes in float16."""
    report = converter.measure_accuracy(ROOT / "models" / "tiny_cnn.onnx", "float16",
                                        target="chromium-litert", compute="float16",
                                        samples=4)
    assert report.passed and report.ratio <= 0.55
    assert min(o.cosine for o in report.outputs) >= 0.9999
    assert any("computed in float16 inside the graph" in n for n in report.notes)


def test_a_target_without_float16_is_refused(tmp_path):
    target = _narrowed(tmp_path, lambda op, operand: True)
    with pytest.raises(ConverterError, match="target 'narrowed' takes no float16 operand"):
        converter.convert(ROOT / "models" / "tiny_cnn.onnx", target=str(target),
                          compute="float16")


@pytest.mark.parametrize("bad, words", [
    (dict(compute="float64"), "unknown compute type 'float64'"),
    (dict(compute="float16", output="x.tflite"), "float16 compute is kept in .webnn, .json"),
    (dict(compute="float16", dims={"N": [1, 2]}), "compute='float16' converts one value"),
])
def test_refused_before_anything_is_read(bad, words, tmp_path):
    kwargs = dict(bad)
    output = kwargs.pop("output", None)
    with pytest.raises(ConverterError) as e:
        converter.convert(tmp_path / "missing.onnx", None if output is None
                          else tmp_path / output, **kwargs)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert not list(tmp_path.iterdir())

