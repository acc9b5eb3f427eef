"""The attribute table shipped with the converter (onnx_schemas.json) against the onnx package's
own schemas: for every op of the default domain and ai.onnx.ml at every opset the table covers,
the same attribute names, types and required ones, the same version in force, and the same
"not defined here". Past the table's newest opset the answers come from onnx.defs itself."""
from __future__ import annotations

import onnx
import onnx.defs
import pytest

from converter.importers.onnx import schema_table
from converter.importers.onnx.checks import check_attribute_types
from converter.importers.onnx.context import OnnxNode
from converter.importers.onnx.registry import Invalid

_DOMAINS = ("", "ai.onnx.ml")


def _onnx_answer(op_type: str, opset: int, domain: str):
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    return (schema.since_version, {n: int(a.type) for n, a in schema.attributes.items()},
            frozenset(n for n, a in schema.attributes.items() if a.required))


def _names(domain: str) -> set[str]:
    return {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == domain}


@pytest.mark.parametrize("domain", _DOMAINS)
def test_the_table_says_what_onnx_says_for_every_op_at_every_opset(domain):
    newest = schema_table._table()["newest"][domain]
    installed = onnx.defs.onnx_opset_version() if domain == "" \
        else onnx.defs.onnx_ml_opset_version()
    names = _names(domain) | {"NoSuchOp"}
    assert set(schema_table._table()["ops"][domain]) <= names
    compared = 0
    for op_type in sorted(names):
        for opset in range(1, min(newest, installed) + 1):
            expected = _onnx_answer(op_type, opset, domain)
            got = schema_table.declared(op_type, opset, domain)
            since = schema_table.since_version(op_type, opset, domain)
            if expected is None:
                assert got is None and since is None, (op_type, opset)
            else:
                assert (since, *got) == expected, (op_type, opset)
                compared += 1
    assert compared > (3000 if domain == "" else 50)  # the comparison ran over the table


def test_past_the_newest_opset_onnx_defs_answers(monkeypatch):
    table = dict(schema_table._table(), newest={"": 12, "ai.onnx.ml": 1})
    monkeypatch.setattr(schema_table, "_table", lambda: table)
    schema_table.declared.cache_clear()
    try:
        # Split-13 made `split` an input: the table alone (newest 12 here) would answer with
        # Split-11, which has the attribute; past its newest opset onnx.defs answers.
        assert schema_table.since_version("Split", 13) == 13
        assert "split" not in schema_table.declared("Split", 13, "")[0]
        assert schema_table.since_version("Split", 12) == 11  # still the table's
        assert "split" in schema_table.declared("Split", 12, "")[0]
        assert schema_table.declared("NoSuchOp", 13, "") is None
    finally:
        schema_table.declared.cache_clear()


def test_the_attribute_check_reads_the_table_without_onnx_defs_registry(monkeypatch):
    """A conversion's attribute check never asks onnx.defs for an opset the table covers (the
    registry costs 9 ms and 7 MB): with get_schema made to fail, the check still refuses a
    wrong type and accepts a right one."""
    def refuse(*args, **kwargs):
        raise AssertionError("onnx.defs.get_schema asked")

    monkeypatch.setattr(onnx.defs, "get_schema", refuse)
    schema_table.declared.cache_clear()
    try:
        good = onnx.helper.make_node("Softmax", ["x"], ["y"], axis=1)
        check_attribute_types(OnnxNode(good, 13, 0))
        bad = onnx.helper.make_node("Softmax", ["x"], ["y"], axis=1.0)
        with pytest.raises(Invalid, match="attribute 'axis' has type FLOAT, but ONNX's Softmax "
                                          r"\(opset 13\) declares INT"):
            check_attribute_types(OnnxNode(bad, 13, 0))
    finally:
        schema_table.declared.cache_clear()
