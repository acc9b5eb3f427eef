"""The built-in targets load, validate and state the facts of their sources; a browser's raw
opSupportLimits dump is a target as it is; malformed target files fail with the JSON path."""
import copy
import importlib.util
import json
from pathlib import Path

import pytest

from converter.errors import ConverterError, FormatError
from converter.ops.registry import all_ops, spec_limits
from converter.schemas import validate
from converter.targets import EXTENSION, builtin_targets, load_target

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "converter" / "targets" / "data"
SHARED_DUMP = ROOT.parent / "shared" / "targets" / "chromium-153-litert.opSupportLimits.json"
BUILTIN = ["chromium-litert", "coreml", "directml", "onnxruntime", "spec"]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_targets", ROOT / "tools" / "gen_targets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ranks(target, op, operand):
    r = target.operand_limits(op, operand)["rankRange"]
    return r["min"], r["max"]


def _types(target, op, operand):
    return target.operand_limits(op, operand)["dataTypes"]


def test_builtin_targets_are_the_five_files():
    assert builtin_targets() == BUILTIN


@pytest.mark.parametrize("name", BUILTIN)
def test_each_builtin_target_loads_validates_and_covers_every_op(name):
    data = json.loads((DATA / f"{name}.json").read_text())
    validate(data, "target", name)
    target = load_target(name)
    assert target.name == name and target.source.endswith(f"{name}.json")
    assert target.sources and target.description
    # Every op of the catalogue, with a limit for every operand and result the spec names.
    assert target.ops() == sorted(all_ops())
    for op, operands in spec_limits().items():
        assert sorted(target.limits[op]) == sorted(operands), op
        for limit in target.limits[op].values():
            assert limit["dataTypes"] and limit["rankRange"]["min"] <= limit["rankRange"]["max"]


def test_coreml_facts_from_backends_md():
    t = load_target("coreml")
    assert t.preferred_layout == "nchw" and t.max_tensor_bytes == 2**31 - 1
    assert _ranks(t, "batchNormalization", "input") == (3, 5)
    assert _ranks(t, "instanceNormalization", "input") == (4, 4)  # CoreML 3..4 within the spec's 4
    assert _ranks(t, "gemm", "a") == (2, 2) and _ranks(t, "gemm", "c") == (0, 2)
    assert _ranks(t, "argMax", "input") == (1, 5)  # no scalars
    assert _ranks(t, "add", "a") == (0, 5)  # "up to 5D tensors"
    assert _ranks(t, "lstm", "output2") == (4, 4)
    assert t.io_limits("input")["dataTypes"] == ["float32", "float16", "int32"]
    assert _types(t, "gather", "indices") == ["int32"]
    assert _types(t, "logicalAnd", "a") == ["uint8"] and _types(t, "equal", "output") == ["uint8"]
    # No int64 or uint64 anywhere.
    for limits in [t.io_limits(k) for k in ("input", "constant", "output")] + [
            limit for op in t.ops() for limit in t.limits[op].values()]:
        assert not {"int64", "uint64"} & set(limits["dataTypes"])
    assert t.must_be_constant("batchNormalization") == ["mean", "variance", "scale", "bias"]
    assert t.must_be_constant("lstm") == ["weight", "recurrentWeight", "bias", "recurrentBias",
                                          "peepholeWeight"]
    assert t.must_be_constant("lstmCell") == t.must_be_constant("lstm")
    assert t.must_be_constant("conv2d") == ["bias"] == t.must_be_constant("convTranspose2d")
    assert t.must_be_constant("layerNormalization") == ["scale", "bias"]
    assert t.must_be_constant("gru") == [] and t.must_be_constant("relu") == []
    assert t.emulates("gemm") == "as matmul, mul and add" and t.emulates("conv2d") is None


def test_chromium_litert_is_the_real_dump_plus_a_name():
    t = load_target("chromium-litert")
    assert t.preferred_layout == "nhwc" and t.max_tensor_bytes == 2147483647
    assert _ranks(t, "conv2d", "input") == (4, 4)
    assert _ranks(t, "add", "a") == (0, 6) and _ranks(t, "equal", "a") == (0, 5)
    # measured: build() refuses computed gatherElements indices (tools/vision_sweep.py's STN)
    assert t.constant_operands == {"gatherElements": ["indices"]}
    assert json.loads((DATA / "chromium-litert.json").read_text())[EXTENSION] == \
        _gen().LITERT_EXT
    if SHARED_DUMP.is_file():
        data = json.loads((DATA / "chromium-litert.json").read_text())
        assert {k: v for k, v in data.items() if k != EXTENSION} == json.loads(
            SHARED_DUMP.read_text())


def test_directml_and_onnxruntime_facts():
    dml = load_target("directml")
    assert dml.preferred_layout == "nchw" and dml.max_tensor_bytes == 2**32 - 1
    assert _ranks(dml, "conv2d", "bias") == (1, 1) and _ranks(dml, "gemm", "a") == (2, 2)
    assert _ranks(dml, "relu", "input") == (0, 8)
    assert _types(dml, "add", "a") == ["float32", "float16", "int32", "uint32"]  # level 4.0
    assert _types(dml, "gather", "indices") == ["int32", "uint32", "int64"]
    ort = load_target("onnxruntime")
    assert ort.preferred_layout == "nchw" and ort.max_tensor_bytes == 2**31 - 1
    assert _ranks(ort, "batchNormalization", "input") == (1, 8)
    assert _ranks(ort, "triangular", "input") == (2, 8)
    assert _types(ort, "argMax", "output") == ["int32", "int64"]
    assert "int4" in ort.io_limits("input")["dataTypes"]


def test_spec_target_is_the_spec_required_columns():
    t = load_target("spec")
    for op, operands in spec_limits().items():
        for operand, entry in operands.items():
            assert t.limits[op][operand] == {"dataTypes": entry["requiredDataTypes"],
                                             "rankRange": entry["requiredRankRange"]}, op
    assert _ranks(t, "add", "a") == (0, 5) and _types(t, "argMin", "output") == ["int32"]
    assert t.io_limits("input")["dataTypes"] == ["float32", "float16", "int32", "int8", "uint8"]


def test_generated_files_are_what_the_generator_writes():
    gen = _gen()
    assert json.loads((DATA / "spec.json").read_text()) == gen.spec_target()
    assert json.loads((DATA / "coreml.json").read_text()) == gen.backend_target(
        gen.COREML, gen.COREML_EXT)
    assert json.loads((DATA / "onnxruntime.json").read_text()) == gen.backend_target(
        gen.ONNXRUNTIME, gen.ONNXRUNTIME_EXT)
    dml = json.loads((DATA / "directml.json").read_text())
    assert dml == gen.backend_target(gen.directml_at((4, 0)), {
        **gen.DIRECTML_EXT, "description": gen.DIRECTML_EXT["description"].format(level="4.0")})
    # A later feature level widens what 4.0 lacks: int64 add at 4.1, every type at 5.1.
    at_5_1 = gen.backend_target(gen.directml_at((5, 1)), gen.DIRECTML_EXT)
    assert "int64" in at_5_1["add"]["a"]["dataTypes"] and "uint8" in at_5_1["add"]["a"]["dataTypes"]
    assert at_5_1["resample2d"]["input"]["rankRange"] == {"min": 4, "max": 4}


def test_a_raw_browser_dump_loads_as_it_is(tmp_path):
    data = json.loads((DATA / "chromium-litert.json").read_text())
    raw = {k: v for k, v in data.items() if k != EXTENSION}
    path = tmp_path / "my-browser.opSupportLimits.json"
    path.write_text(json.dumps(raw))
    t = load_target(path)
    assert t.name == "my-browser" and t.preferred_layout == "nhwc" and len(t.ops()) == 95
    assert t.constant_operands == {} and t.emulated == {} and t.sources == []
    assert _ranks(t, "conv2d", "filter") == (4, 4)


def test_an_old_dump_without_rank_ranges_or_byte_limit_loads(tmp_path):
    old = {"preferredInputLayout": "nchw",
           "input": {"dataTypes": ["float32"]}, "constant": {"dataTypes": ["float32"]},
           "output": {"dataTypes": ["float32"]},
           "relu": {"input": {"dataTypes": ["float32"]}, "output": {"dataTypes": ["float32"]}}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    t = load_target(path)
    assert t.ops() == ["relu"] and t.max_tensor_bytes is None
    assert t.supports("relu") and not t.supports("conv2d")


def _write(tmp_path, doc, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_malformed_target_files_name_the_json_path(tmp_path):
    base = json.loads((DATA / "spec.json").read_text())
    bad_layout = {**base, "preferredInputLayout": "ncwh"}
    with pytest.raises(FormatError, match=r"\$\.preferredInputLayout: 'ncwh' is not one of"):
        load_target(_write(tmp_path, bad_layout))
    bad_rank = copy.deepcopy(base)
    bad_rank["relu"]["input"]["rankRange"] = {"min": 0}
    with pytest.raises(FormatError, match=r"\$\.relu\.input\.rankRange: 'max' is a required"):
        load_target(_write(tmp_path, bad_rank))
    bad_ext = {**base, EXTENSION: {"name": "x", "constantOperand": {}}}
    with pytest.raises(FormatError, match="Additional properties are not allowed"):
        load_target(_write(tmp_path, bad_ext))


def test_constant_operands_must_name_real_ops_and_operands(tmp_path):
    base = json.loads((DATA / "spec.json").read_text())
    unknown_op = {**base, EXTENSION: {"constantOperands": {"batchNorm": ["mean"]}}}
    with pytest.raises(FormatError, match="unknown op 'batchNorm'"):
        load_target(_write(tmp_path, unknown_op))
    unknown_operand = {**base, EXTENSION: {"constantOperands": {"conv2d": ["weights"]}}}
    with pytest.raises(FormatError, match="conv2d has no operand 'weights'.*input, filter, bias"):
        load_target(_write(tmp_path, unknown_operand))


def test_chromium_litert_refuses_pad_in_edge_mode():
    # measured: build() says "The edge padding mode is not supported in tflite schema"
    # (tests/browser/test_rewrites_in_chromium.py); reflection builds
    t = load_target("chromium-litert")
    assert t.refused_options == {"pad": {"mode": ["edge"]}}
    assert t.refuses("pad", "mode", "edge") and not t.refuses("pad", "mode", "reflection")
    assert not load_target("spec").refuses("pad", "mode", "edge")


def test_refused_options_must_name_real_ops_enum_options_and_values(tmp_path):
    base = json.loads((DATA / "spec.json").read_text())
    for table, message in [
            ({"padd": {"mode": ["edge"]}}, "refusedOptions names an unknown op 'padd'"),
            ({"pad": {"value": ["0"]}}, "pad has no enum option 'value'.*enum options are mode"),
            ({"pad": {"mode": ["wrap"]}}, "pad mode has no value 'wrap'.*constant, edge, "
                                          "reflection")]:
        doc = {**base, EXTENSION: {"refusedOptions": table}}
        with pytest.raises(FormatError, match=message):
            load_target(_write(tmp_path, doc))
    not_a_list = {**base, EXTENSION: {"refusedOptions": {"pad": {"mode": "edge"}}}}
    with pytest.raises(FormatError, match=r"refusedOptions\.pad\.mode: 'edge' is not of type"):
        load_target(_write(tmp_path, not_a_list))


def test_refused_data_types_are_taken_out_of_the_listed_ones(tmp_path):
    """A backend that lists int32 clamp but refuses it at build(): check reports the int32
    clamp, and convert --target rewrites it (int_clamp) as it does where the type is not
    listed at all."""
    from converter.builder import GraphBuilder
    from converter.targets.check import check
    from converter.targets.pipeline import convert_for_target

    base = json.loads((DATA / "onnxruntime.json").read_text())
    base[EXTENSION] = {"name": "picky", "refusedDataTypes": {
        "clamp": {"input": ["int32", "int64"], "output": ["int32", "int64"]}}}
    target = load_target(_write(tmp_path, base, "picky.json"))
    assert _types(target, "clamp", "input") == [
        t for t in _types(load_target("onnxruntime"), "clamp", "input")
        if t not in ("int32", "int64")]
    b = GraphBuilder("g")
    graph = b.build({"y": b.clamp(b.input("x", "int32", [3]), minValue=0, name="clip")})
    assert [(v.kind, v.advice) for v in check(graph, target)] == [
        ("data-type", "int-clamp"), ("data-type", "int-clamp")]
    assert check(graph, "onnxruntime") == []
    assert convert_for_target(graph, target).passed
    assert [op.op_type for op in graph.operations] == ["max"]


def test_refused_data_types_must_name_listed_ops_operands_and_types(tmp_path):
    base = json.loads((DATA / "spec.json").read_text())
    for table, message in [
            ({"clamps": {"input": ["float16"]}}, "names 'clamps', which the file does not "
                                                "list as an op"),
            ({"input": {"input": ["float16"]}}, "names 'input', which the file does not list"),
            ({"clamp": {"x": ["float16"]}}, "clamp lists no data types for 'x'"),
            ({"clamp": {"input": ["int8"]}}, "clamp input does not list int8")]:
        doc = {**base, EXTENSION: {"refusedDataTypes": table}}
        with pytest.raises(FormatError, match=message):
            load_target(_write(tmp_path, doc))


def test_unknown_target_name_lists_the_builtin_ones():
    with pytest.raises(ConverterError, match="no target named 'tpu'.*chromium-litert, coreml"):
        load_target("tpu")


def test_load_target_passes_a_target_through():
    t = load_target("coreml")
    assert load_target(t) is t
