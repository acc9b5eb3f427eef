"""`webnn-convert ops --source onnx|tflite [OP]`: the importers' rule tables, per source op."""
import json

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.importers.onnx.registry import known_op_types, rule_for
from converter.importers.tflite.registry import NOT_IMPORTED, known_ops


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_gridsample_is_a_composition_of_what_its_rule_emits():
    r = run("ops", "--source", "onnx", "gridsample")  # case-insensitive
    assert r.exit_code == 0, r.output
    assert r.output.startswith("onnx GridSample: supported, composition of ")
    assert "gatherElements" in r.output and "where" in r.output and "(opset 16+)" in r.output
    entry = json.loads(run("ops", "--source", "onnx", "GridSample", "--json").output)
    assert entry["supported"] and entry["becomes"] == "composition"
    assert {"gatherElements", "floor", "clamp", "where"} <= set(entry["webnnOps"])
    assert entry["ruleSince"] == [16] and entry["opsets"] == "16+"


@pytest.mark.parametrize("op, line", [
    ("Relu", "onnx Relu: supported, WebNN relu (opset 1+)"),
    ("STRINGSPLIT", "onnx StringSplit: unsupported: no import rule; "
                    "ONNX op StringSplit is not supported"),
    ("NoSuchOp", "onnx NoSuchOp: unsupported: no import rule; NoSuchOp is not an ONNX op "
                 "the converter knows of"),
])
def test_one_onnx_op(op, line):
    r = run("ops", "--source", "onnx", op)
    assert r.exit_code == 0 and r.output.strip() == line


@pytest.mark.parametrize("op, line", [
    ("while", "tflite WHILE: unsupported: not imported: " + NOT_IMPORTED["WHILE"]),
    ("relu", "tflite RELU: supported, WebNN relu"),
    ("NOT_A_TFLITE_OP", "tflite NOT_A_TFLITE_OP: unsupported: no import rule; NOT_A_TFLITE_OP "
                        "is not a TFLite builtin op the converter knows of"),
])
def test_one_tflite_op(op, line):
    r = run("ops", "--source", "tflite", op)
    assert r.exit_code == 0 and r.output.strip() == line


def test_onnx_table_lists_every_rule_with_its_opsets():
    rows = json.loads(run("ops", "--source", "onnx", "--json").output)
    known = {op if not domain else f"{domain}:{op}" for domain, op in known_op_types()}
    assert {r["op"] for r in rows} == known
    for r in rows:
        domain, _, op = r["op"].rpartition(":")
        assert rule_for(domain, op, r["ruleSince"][0]) is not None
        assert rule_for(domain, op, r["ruleSince"][0] - 1) is None or r["ruleSince"][0] == 1
        assert r["becomes"] in ("composition", "some of", "see rule") or r["webnnOps"] == [
            r["becomes"]]
    text = run("ops", "--source", "onnx")
    assert text.exit_code == 0 and text.output.splitlines()[-1] == f"{len(known)} onnx ops"
    assert any(line.split()[:2] == ["GridSample", "16+"] for line in text.output.splitlines())


def test_tflite_table_lists_every_rule():
    rows = json.loads(run("ops", "--source", "tflite", "--json").output)
    assert [r["op"] for r in rows] == known_ops()
    shape = next(r for r in rows if r["op"] == "SHAPE")  # computed at conversion time
    assert shape["becomes"] == "see rule" and shape["webnnOps"] == []


def test_ops_without_source_is_unchanged_and_op_needs_source():
    r = run("ops")
    assert r.exit_code == 0 and r.output.splitlines()[0].split()[:2] == ["op", "family"]
    r = run("ops", "relu")
    assert r.exit_code == 2 and "OP needs --source" in r.output
