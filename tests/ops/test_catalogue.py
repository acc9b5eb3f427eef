"""The catalogue holds exactly the spec's 95 MLGraphBuilder ops, each fully described."""
import json

from click.testing import CliRunner

from cli.main import main
from converter.ops.builder import GraphBuilder
from converter.ops import all_ops

# The operator methods of MLGraphBuilder in index.bs @ c515210 (2026-06-27), written out here
# so the catalogue is checked against the spec, not against our own generated table.
SPEC_OPS = """
argMin argMax batchNormalization cast clamp concat conv2d convTranspose2d cumulativeSum add sub mul
div max min pow equal notEqual greater greaterOrEqual lesser lesserOrEqual logicalNot logicalAnd
logicalOr logicalXor isNaN isInfinite abs ceil cos erf exp floor identity log neg reciprocal
roundEven sin sign sqrt tan dequantizeLinear quantizeLinear elu expand gather gatherElements
gatherND gelu gemm gru gruCell hardSigmoid hardSwish instanceNormalization layerNormalization
leakyRelu linear lstm lstmCell matmul pad averagePool2d l2Pool2d maxPool2d prelu reduceL1 reduceL2
reduceLogSum reduceLogSumExp reduceMax reduceMean reduceMin reduceProduct reduceSum
reduceSumSquare relu resample2d reshape reverse scatterElements scatterND sigmoid slice softmax
softplus softsign split tanh tile transpose triangular where
""".split()


def test_spec_list_has_95_ops():
    assert len(SPEC_OPS) == len(set(SPEC_OPS)) == 95


def test_catalogue_is_exactly_the_spec():
    assert set(all_ops()) == set(SPEC_OPS)


def test_every_op_has_a_builder_method():
    for name in SPEC_OPS:
        assert callable(getattr(GraphBuilder, name)), name


def test_every_operand_slot_has_limits():
    for name, opdef in all_ops().items():
        for slot in opdef.slots:
            assert slot in opdef.limits, f"{name}.{slot} has no limits"


def test_cli_ops_json_lists_the_95_ops_with_types_and_ranks():
    result = CliRunner().invoke(main, ["ops", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["name"] for r in rows] == sorted(SPEC_OPS)
    by_name = {r["name"]: r for r in rows}
    # Spot checks against the spec's tables.
    assert by_name["conv2d"]["limits"]["input"]["dataTypes"] == ["float32", "float16"]
    assert by_name["conv2d"]["limits"]["input"]["rankRange"] == {"min": 4, "max": 4}
    assert by_name["conv2d"]["limits"]["filter"]["dataTypes"] == ["float32", "float16"]
    assert by_name["where"]["limits"]["condition"]["dataTypes"] == ["uint8"]
    assert by_name["matmul"]["limits"]["a"]["rankRange"] == {"min": 2, "max": None}
    assert by_name["gather"]["limits"]["indices"]["dataTypes"] == ["int32", "uint32", "int64"]
    assert by_name["argMax"]["limits"]["output"]["dataTypes"] == ["int32", "int64"]
    # Which source ops import to each WebNN op.
    assert {"Conv", "ConvInteger", "QLinearConv"} <= set(by_name["conv2d"]["importedFrom"]["onnx"])
    assert "Relu" in by_name["relu"]["importedFrom"]["onnx"]
    assert "Resize" in by_name["resample2d"]["importedFrom"]["onnx"]
    for row in rows:
        for operand, lim in row["limits"].items():
            assert lim["dataTypes"], (row["name"], operand)
            assert "min" in lim["rankRange"], (row["name"], operand)
