"""The TFLite importer's coverage: at least 100 builtin ops, the ones issue 4 lists, each
exercised against LiteRT by a test in this folder, and `webnn-convert ops`'s table."""
from __future__ import annotations

from pathlib import Path

from converter.catalogue.webnn_ops import importer_tables
from converter.importers.tflite import known_ops
from converter.ops.registry import all_ops

ISSUE_4 = """CONV_2D DEPTHWISE_CONV_2D TRANSPOSE_CONV FULLY_CONNECTED BATCH_MATMUL AVERAGE_POOL_2D
MAX_POOL_2D L2_POOL_2D ADD SUB MUL DIV POW MAXIMUM MINIMUM EQUAL NOT_EQUAL LESS LESS_EQUAL
GREATER GREATER_EQUAL SELECT SELECT_V2 MEAN SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_ANY
RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE STRIDED_SLICE SLICE GATHER GATHER_ND SCATTER_ND
CONCATENATION SPLIT SPLIT_V PACK UNPACK PAD PADV2 MIRROR_PAD TILE BROADCAST_TO RESIZE_BILINEAR
RESIZE_NEAREST_NEIGHBOR SOFTMAX LOG_SOFTMAX LOGISTIC TANH RELU RELU6 RELU_N1_TO_1 LEAKY_RELU
PRELU ELU HARD_SWISH GELU DEPTH_TO_SPACE SPACE_TO_DEPTH CAST ARG_MAX ARG_MIN CUMSUM
L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION SQUARED_DIFFERENCE FLOOR_DIV FLOOR_MOD SQUARE RSQRT
UNIDIRECTIONAL_SEQUENCE_LSTM DEQUANTIZE QUANTIZE DENSIFY CUSTOM:Convolution2DTransposeBias""".split()


def test_at_least_100_builtin_ops_and_every_one_issue_4_lists():
    ops = known_ops()
    builtins = [op for op in ops if not op.startswith("CUSTOM:")]
    assert len(builtins) >= 100
    assert [op for op in ISSUE_4 if op not in ops] == []


def test_every_supported_op_is_run_against_litert_by_a_test_here():
    # Every test module here compares with LiteRT through helpers.check; an op named in none
    # of them is not tested.
    folder = Path(__file__).parent
    text = "".join(p.read_text() for p in folder.glob("test_*.py") if p.name != Path(__file__).name)
    untested = [op for op in known_ops() if f'"{op}"' not in text]
    assert untested == []


def test_ops_table_lists_tflite_sources_of_real_webnn_ops():
    table = importer_tables["tflite"]
    assert "conv2d" in table["CONV_2D"] and "conv2d" in table["DEPTHWISE_CONV_2D"]
    assert table["CUSTOM:Convolution2DTransposeBias"] == ["convTranspose2d"]
    webnn = set(all_ops())
    wrong = {src: [w for w in targets if w not in webnn] for src, targets in table.items()}
    assert {k: v for k, v in wrong.items() if v} == {}
