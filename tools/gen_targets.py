"""Regenerate the built-in targets in converter/targets/data/ from facts.

A target file is an opSupportLimits JSON (see converter/targets/__init__.py). Five ship:

* `spec`: the data types and ranks every WebNN implementation MUST support (the "required"
  columns of the spec's tensor-limits tables, from converter/ops/spec_limits.json).
* `chromium-litert`: a real Chromium 153 dump (LiteRT/XNNPACK on Linux), copied as it is; only
  the "webnn-converter" member is added.
* `coreml`, `directml`, `onnxruntime`: Chromium's backend context properties, as summarized in
  shared/reference/backends.md and stated in the files it cites (the per-operand data type
  sets and rank limits of `GetContextProperties()` / `GetProperties()`), turned into
  opSupportLimits the way a browser reports them: every backend limit intersected with the
  spec's allowed data types and ranks.

The facts are the tables below; the code only spreads them over each op's operands.

Usage: python tools/gen_targets.py [--litert-dump PATH] [--dml-feature-level 4.0]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# _EXTENSIONS: the int4/uint4 Chromium's base limits accept beyond the spec's tables
# (quantization ops); one source of truth with the op catalogue's own checks.
from converter.ops.registry import _EXTENSIONS, spec_limits  # noqa: E402

OUT = ROOT / "converter" / "targets" / "data"
LITERT_DUMP = ROOT.parent / "shared" / "targets" / "chromium-153-litert.opSupportLimits.json"
EXT = "webnn-converter"
BACKENDS_MD = "shared/reference/backends.md"

# -- data type sets, by the names Chromium's sources give them ----------------------------------
F = ("float32", "float16")                                           # kFloat16To32
ALL8 = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")  # AtLeast8bits
ALL = ALL8 + ("int4", "uint4")                                        # SupportedDataTypes::All()
U8 = ("uint8",)
FI32 = F + ("int32",)                                                 # CoreML kFloatsAndInt32
FI32_I8 = F + ("int32", "int8", "uint8")                              # kFloat16To32Int8To32AndUint8
I8_32 = ("int8", "uint8", "int32", "uint32")                          # kInts8Ints32 / kInts8To32
F_I8_I32 = F + ("int8", "int32")                                      # kFloat16To32Int8To32
F_I8_I64 = F + ("int8", "int32", "int64")                             # kFloat16To32Int8To64
F_INTS32_64 = F + ("int32", "uint32", "int64", "uint64")              # kFloat16To32Ints32To64
I32_64 = ("int32", "int64")                                           # kInt32To64
INTS4_8 = ("int4", "uint4", "int8", "uint8")                          # kInts4ToInts8


def upto(n):
    return (0, n)


def nonscalar(n):
    return (1, n)


def exactly(n):
    return (n, n)


# -- the backends' context properties -----------------------------------------------------------
# The recurrent ops' limits, the same in the three backends' sources.
RNN = {
    "gru_input": (F, exactly(3)), "gru_bias": (F, exactly(2)), "gru_output_sequence": (F, exactly(4)),
    "gru_cell_input": (F, exactly(2)), "gru_cell_bias": (F, exactly(1)),
    "lstm_input": (F, exactly(3)), "lstm_bias": (F, exactly(2)),
    "lstm_output_sequence": (F, exactly(4)),
    "lstm_cell_input": (F, exactly(2)), "lstm_cell_bias": (F, exactly(1)),
}
# Each field is (data types, (min rank, max rank)); a field Chromium names `<op>_input` governs
# the op's positional operands and result unless OPERAND_FIELDS says otherwise.
_CM, _CM_NS = upto(5), nonscalar(5)
COREML = {
    "layout": "nchw", "maxTensorByteLength": 2**31 - 1,  # INT32_MAX "for security reasons"
    "input": (FI32, _CM), "constant": (F + ("int32", "uint32", "int8", "uint8", "int4", "uint4"), _CM),
    "output": (FI32, _CM),
    "fields": {
        "arg_min_max_input": (FI32, _CM_NS), "arg_min_max_output": (("int32",), _CM),
        "batch_normalization_input": (F, (3, 5)), "batch_normalization_mean": (F, exactly(1)),
        "cast_input": (FI32_I8, _CM), "clamp_input": (F, _CM), "concat_inputs": (FI32, _CM),
        "conv2d_input": (F, (3, 5)), "conv2d_bias": (F, exactly(1)),
        "conv_transpose2d_input": (F, (3, 5)), "conv_transpose2d_bias": (F, exactly(1)),
        "cumulative_sum_input": (FI32, _CM),
        "dequantize_linear_input": (I8_32, _CM), "dequantize_linear_scale": (F, _CM),
        "dequantize_linear_zero_point": (I8_32, _CM),
        **{f"{k}_input": (FI32, _CM) for k in (
            "add", "sub", "mul", "div", "max", "min", "pow", "equal", "greater",
            "greater_or_equal", "not_equal", "lesser", "lesser_or_equal", "abs", "identity",
            "neg", "sign", "expand", "matmul", "prelu", "reverse", "split", "tile", "transpose",
            "triangular", "scatter_elements", "scatter_nd", "reduce_l1", "reduce_l2",
            "reduce_log_sum", "reduce_log_sum_exp", "reduce_max", "reduce_mean", "reduce_min",
            "reduce_product", "reduce_sum", "reduce_sum_square")},
        **{f"{k}_input": (U8, _CM) for k in ("logical_and", "logical_or", "logical_xor",
                                             "logical_not")},
        **{f"{k}_input": (F, _CM) for k in (
            "is_nan", "is_infinite", "ceil", "cos", "erf", "exp", "floor", "log", "reciprocal",
            "round_even", "sin", "sqrt", "tan", "elu", "gelu", "hard_sigmoid", "hard_swish",
            "layer_normalization", "leaky_relu", "linear", "pad", "relu", "sigmoid", "softmax",
            "softplus", "softsign", "tanh", "quantize_linear")},
        "logical_output": (U8, None),
        **{f"{k}_input": (FI32_I8, _CM) for k in ("gather", "gather_elements", "gather_nd",
                                                  "reshape", "slice")},
        **{f"{k}_indices": (("int32", "int8", "uint8"), _CM) for k in (
            "gather", "gather_elements", "gather_nd")},
        "gemm_a": (F, exactly(2)), "gemm_c": (F, upto(2)),
        **RNN,
        "instance_normalization_input": (F, (3, 4)), "instance_normalization_scale": (F, _CM),
        "average_pool2d_input": (F, (3, 5)), "l2_pool2d_input": (F, (3, 4)),
        "max_pool2d_input": (F, (3, 5)), "resample2d_input": (F, (3, 5)),
        "quantize_linear_zero_point": (I8_32, _CM),
        "scatter_elements_indices": (("int32",), _CM), "scatter_nd_indices": (("int32",), _CM),
        "scatter_nd_updates": (FI32, _CM),
        "where_condition": (U8, _CM), "where_value": (FI32, _CM),
    },
}

_ORT, _ORT_NS = upto(8), nonscalar(8)
ONNXRUNTIME = {
    "layout": "nchw", "maxTensorByteLength": 2**31 - 1,
    "input": (ALL, _ORT), "constant": (ALL, _ORT), "output": (ALL, _ORT),
    "fields": {
        "arg_min_max_input": (ALL8, _ORT_NS), "arg_min_max_output": (I32_64, _ORT),
        "batch_normalization_input": (F, _ORT_NS), "batch_normalization_mean": (F, exactly(1)),
        "cast_input": (ALL, _ORT), "concat_inputs": (ALL8, _ORT_NS),
        "conv2d_input": (F, (3, 8)), "conv2d_bias": (F, exactly(1)),
        "conv_transpose2d_input": (F, (3, 8)), "conv_transpose2d_bias": (F, exactly(1)),
        "cumulative_sum_input": (F + I32_64, _ORT_NS),
        "dequantize_linear_input": (INTS4_8, _ORT), "dequantize_linear_scale": (F, _ORT),
        "dequantize_linear_zero_point": (INTS4_8 + ("int32",), _ORT),
        **{f"{k}_input": (ALL8, _ORT) for k in (
            "clamp", "add", "sub", "mul", "div", "max", "min", "equal", "greater",
            "greater_or_equal", "lesser", "lesser_or_equal", "not_equal", "abs", "erf", "sign",
            "expand", "pad", "reshape", "reverse", "slice", "tile")},
        **{f"{k}_input": (ALL8, _ORT_NS) for k in (
            "gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "split")},
        **{f"{k}_input": (U8, _ORT) for k in ("logical_and", "logical_or", "logical_xor",
                                              "logical_not")},
        **{f"{k}_input": (F, _ORT) for k in (
            "is_nan", "is_infinite", "ceil", "cos", "exp", "floor", "log", "reciprocal",
            "round_even", "sin", "sqrt", "tan", "elu", "gelu", "hard_sigmoid", "hard_swish",
            "layer_normalization", "leaky_relu", "linear", "sigmoid", "softplus", "softsign",
            "tanh")},
        "logical_output": (U8, None),
        "pow_input": (F + I32_64, _ORT), "identity_input": (ALL, _ORT),
        "transpose_input": (ALL, _ORT), "neg_input": (F_I8_I64, _ORT),
        "relu_input": (F_I8_I64, _ORT),
        **{f"{k}_indices": (I32_64, _ORT_NS) for k in ("gather_elements", "gather_nd",
                                                       "scatter_elements", "scatter_nd")},
        "gather_indices": (I32_64, _ORT), "scatter_nd_updates": (ALL8, _ORT),
        "gemm_a": (F_INTS32_64, exactly(2)), "gemm_c": (F_INTS32_64, upto(2)),
        "matmul_input": (F_INTS32_64, _ORT), "prelu_input": (F_INTS32_64, _ORT),
        **RNN,
        "instance_normalization_input": (F, exactly(4)),
        "instance_normalization_scale": (F, exactly(1)),
        "average_pool2d_input": (F, (3, 8)), "l2_pool2d_input": (F, (3, 8)),
        "max_pool2d_input": (("uint8", "int8") + F, (3, 8)),
        "quantize_linear_input": (FI32, _ORT), "quantize_linear_zero_point": (INTS4_8, _ORT),
        **{f"reduce_{k}_input": (F + I32_64, _ORT) for k in (
            "l1", "l2", "log_sum", "log_sum_exp", "max", "mean", "min", "product", "sum",
            "sum_square")},
        "resample2d_input": (F + ("uint8", "int8", "int32"), exactly(4)),
        "softmax_input": (F, _ORT_NS), "triangular_input": (F + ("int64",), (2, 8)),
        "where_condition": (U8, _ORT), "where_value": (F + ("uint8", "int32", "int64"), _ORT),
    },
}

_DML = upto(8)
F_I8_U8 = F + ("int8", "uint8")
F_INTS8_32 = F + I8_32
DIRECTML = {
    "layout": "nchw", "maxTensorByteLength": 2**32 - 1,  # UINT32_MAX, DML's element count limit
    "input": (ALL8, _DML), "constant": (ALL8, _DML), "output": (ALL8, _DML),
    "fields": {
        "arg_min_max_input": (ALL8, _DML), "arg_min_max_output": (I32_64, _DML),
        "batch_normalization_input": (F, _DML), "batch_normalization_mean": (F, _DML),
        "cast_input": (ALL8, _DML),
        **{f"{k}_input": (F_INTS8_32, _DML) for k in (
            "clamp", "max", "min", "pow", "equal", "greater", "greater_or_equal", "lesser",
            "lesser_or_equal", "identity", "expand", "gather", "gather_elements", "gather_nd",
            "pad", "reduce_max", "reduce_min", "reshape", "reverse", "scatter_elements",
            "scatter_nd", "slice", "split", "transpose")},
        "concat_inputs": (F_INTS8_32, _DML), "scatter_nd_updates": (F_INTS8_32, _DML),
        "where_value": (F_INTS8_32, _DML), "where_condition": (U8, _DML),
        "conv2d_input": (F, (3, 5)), "conv2d_bias": (F, exactly(1)),
        "conv_transpose2d_input": (F, (3, 5)), "conv_transpose2d_bias": (F, exactly(1)),
        **{f"{k}_input": (F + ("int32", "uint32"), _DML) for k in (
            "cumulative_sum", "add", "sub", "mul", "div", "reduce_sum", "triangular")},
        "dequantize_linear_input": (I8_32, _DML), "dequantize_linear_scale": (("float32",), _DML),
        "dequantize_linear_zero_point": (I8_32, _DML),
        **{f"{k}_input": (("uint8", "uint32"), _DML) for k in (
            "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not")},
        "logical_output": (("uint8", "uint32"), None),
        **{f"{k}_input": (F_I8_I32, _DML) for k in ("abs", "neg", "sign")},
        **{f"{k}_input": (F, _DML) for k in (
            "is_nan", "is_infinite", "ceil", "cos", "erf", "exp", "floor", "log", "reciprocal",
            "round_even", "sin", "sqrt", "tan", "elu", "gelu", "hard_sigmoid", "hard_swish",
            "instance_normalization", "layer_normalization",
            "leaky_relu", "linear", "matmul", "prelu", "reduce_l1", "reduce_l2", "reduce_log_sum",
            "reduce_log_sum_exp", "reduce_mean", "reduce_product", "reduce_sum_square", "relu",
            "sigmoid", "softmax", "softplus", "softsign", "tanh")},
        **{f"{k}_indices": (("int32", "uint32", "int64", "uint64"), _DML) for k in (
            "gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd")},
        "instance_normalization_scale": (F, _DML),
        "gemm_a": (F, (2, 4)), "gemm_c": (F, upto(2)),
        **RNN,
        "average_pool2d_input": (F, (4, 5)), "l2_pool2d_input": (F, (4, 5)),
        "max_pool2d_input": (F_I8_U8, (4, 5)),
        "quantize_linear_input": (("float32",), _DML), "quantize_linear_zero_point": (("int8", "uint8"), _DML),
        "resample2d_input": (F, exactly(4)),
        "tile_input": (ALL8, _DML),
    },
}
# What each DirectML feature level widens (data types, or ranks where given as a tuple of ints).
DML_UPGRADES = {
    (4, 1): {**{f"{k}_input": ALL8 for k in (
        "equal", "greater", "greater_or_equal", "lesser", "lesser_or_equal", "identity",
        "expand", "gather", "gather_elements", "gather_nd", "not_equal", "reshape", "reverse",
        "scatter_elements", "scatter_nd", "slice", "split", "transpose")},
        "concat_inputs": ALL8, "scatter_nd_updates": ALL8,
        **{f"{k}_input": F_INTS32_64 for k in ("add", "sub", "mul", "triangular")},
        **{f"{k}_input": F_I8_I64 for k in ("abs", "sign")}},
    (5, 0): {**{f"{k}_input": ALL8 for k in ("clamp", "max", "min", "pad", "reduce_max",
                                             "reduce_min", "max_pool2d")},
             "where_value": ALL8,
             **{f"{k}_input": F_INTS32_64 for k in ("cumulative_sum", "reduce_l1", "reduce_sum",
                                                     "reduce_sum_square")}},
    (5, 1): {**{f"{k}_input": ALL8 for k in ("add", "sub", "mul", "triangular")},
             "div_input": F_INTS8_32, "prelu_input": F_I8_I32, "relu_input": F_I8_I32,
             "resample2d_input": upto(4)},
    (6, 0): {"div_input": ALL8, "dequantize_linear_scale": F, "quantize_linear_input": F},
    (6, 2): {"resample2d_input": F_I8_U8},
    (6, 3): {"input": ALL, "constant": ALL, "output": ALL,
             "dequantize_linear_input": INTS4_8 + ("int32", "uint32"),
             "dequantize_linear_zero_point": INTS4_8 + ("int32", "uint32"),
             "quantize_linear_zero_point": INTS4_8},
}

# -- which field governs which operand ---------------------------------------------------------
def snake(op: str) -> str:
    """Chromium's field stem of an op: `greaterOrEqual` -> `greater_or_equal`."""
    return re.sub(r"([A-Z]+)", lambda m: "_" + m.group(1).lower(), op)


MAIN_FIELD = {"argMin": "arg_min_max_input", "argMax": "arg_min_max_input",
              "isNaN": "is_nan_input", "gemm": "gemm_a", "concat": "concat_inputs",
              "where": "where_value"}
LOGICAL_OUT = ("equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual",
               "logicalAnd", "logicalOr", "logicalXor", "logicalNot", "isNaN", "isInfinite")
OPERAND_FIELD = {
    "argMin": {"output": "arg_min_max_output"}, "argMax": {"output": "arg_min_max_output"},
    "batchNormalization": dict.fromkeys(("mean", "variance", "scale", "bias"),
                                        "batch_normalization_mean"),
    "conv2d": {"bias": "conv2d_bias"}, "convTranspose2d": {"bias": "conv_transpose2d_bias"},
    "dequantizeLinear": {"scale": "dequantize_linear_scale", "output": "dequantize_linear_scale",
                         "zeroPoint": "dequantize_linear_zero_point"},
    "quantizeLinear": {"zeroPoint": "quantize_linear_zero_point",
                       "output": "quantize_linear_zero_point"},
    **{op: {"output": "logical_output"} for op in LOGICAL_OUT},
    **{op: {"indices": f"{snake(op)}_indices"}
       for op in ("gather", "gatherElements", "gatherND", "scatterElements")},
    "scatterND": {"indices": "scatter_nd_indices", "updates": "scatter_nd_updates"},
    "gemm": {"c": "gemm_c"},
    "gru": {"bias": "gru_bias", "recurrentBias": "gru_bias", "output1": "gru_output_sequence"},
    "gruCell": {"bias": "gru_cell_bias", "recurrentBias": "gru_cell_bias"},
    "lstm": {**dict.fromkeys(("bias", "recurrentBias", "peepholeWeight"), "lstm_bias"),
             "output2": "lstm_output_sequence"},
    "lstmCell": dict.fromkeys(("bias", "recurrentBias", "peepholeWeight"), "lstm_cell_bias"),
    "instanceNormalization": dict.fromkeys(("scale", "bias"), "instance_normalization_scale"),
    "where": {"condition": "where_condition"},
}
TYPE_ORDER = ALL  # the order a browser lists data types in


def _spec_entry(spec_op: dict, operand: str, key: str):
    value = spec_op[operand][key]
    while isinstance(value, dict) and "sameAs" in value:
        value = spec_op[value["sameAs"]][key]
    return value


def op_limits(fields: dict, op: str, spec_op: dict) -> dict:
    """One op's opSupportLimits member: the backend's fields intersected with the spec's limits.

    Operands get the field's data types and ranks; results get its data types, and its ranks
    only as an upper bound (a result's lowest rank follows from the op, not from the field),
    unless the spec ranks the result as an operand: then it takes that operand's limit.
    """
    main = MAIN_FIELD.get(op, f"{snake(op)}_input")
    limits = {}
    for operand in spec_op:
        field = OPERAND_FIELD.get(op, {}).get(operand, main)
        if field not in fields or main not in fields:
            raise SystemExit(f"{op}.{operand}: the backend table has no field '{field}'")
        types, ranks = fields[field]
        ranks = ranks or fields[main][1]
        allowed = set(_spec_entry(spec_op, operand, "dataTypes"))
        allowed |= set(_EXTENSIONS.get(op, {}).get(operand, ()))
        spec_ranks = _spec_entry(spec_op, operand, "rankRange")
        lo, hi = spec_ranks["min"], spec_ranks["max"]
        same_rank = spec_op[operand]["rankRange"].get("sameAs")
        if same_rank in limits:  # e.g. a result as ranked as the input: take the input's limit
            lo, hi = limits[same_rank]["rankRange"]["min"], limits[same_rank]["rankRange"]["max"]
        else:
            if not operand.startswith("output"):
                lo = max(lo, ranks[0])
            hi = ranks[1] if hi is None else min(hi, ranks[1])
        data_types = [t for t in TYPE_ORDER if t in types and t in allowed]
        if not data_types or lo > hi:
            raise SystemExit(f"{op}.{operand}: the backend's '{field}' and the spec's limits "
                             f"do not overlap")
        limits[operand] = {"dataTypes": data_types, "rankRange": {"min": lo, "max": hi}}
    return limits


def tensor_limits(types, ranks) -> dict:
    return {"dataTypes": [t for t in TYPE_ORDER if t in types],
            "rankRange": {"min": ranks[0], "max": ranks[1]}}


def backend_target(backend: dict, ext: dict) -> dict:
    doc = {EXT: ext, "preferredInputLayout": backend["layout"],
           "maxTensorByteLength": backend["maxTensorByteLength"]}
    for kind in ("input", "constant", "output"):
        doc[kind] = tensor_limits(*backend[kind])
    for op, spec_op in sorted(spec_limits().items()):
        doc[op] = op_limits(backend["fields"], op, spec_op)
    return doc


def directml_at(level: tuple[int, int]) -> dict:
    """The DirectML table at a feature level: the 4.0 facts widened by each later level."""
    backend = {**DIRECTML, "fields": dict(DIRECTML["fields"])}
    for at, changes in sorted(DML_UPGRADES.items()):
        if at > level:
            break
        for field, value in changes.items():
            ranks_change = all(isinstance(v, int) for v in value)
            if field in ("input", "constant", "output"):
                backend[field] = (value, backend[field][1])
            elif ranks_change:
                backend["fields"][field] = (backend["fields"][field][0], value)
            else:
                backend["fields"][field] = (value, backend["fields"][field][1])
    return backend


def spec_target() -> dict:
    required: set[str] = set()
    ops = {}
    for op, spec_op in sorted(spec_limits().items()):
        ops[op] = {}
        for operand, entry in spec_op.items():
            required.update(entry["requiredDataTypes"])
            ops[op][operand] = {"dataTypes": list(entry["requiredDataTypes"]),
                                "rankRange": dict(entry["requiredRankRange"])}
    # Graph inputs, constants and outputs: every type some op must support, and the highest
    # required rank (5), since a tensor no op must accept is not guaranteed to be usable.
    io = tensor_limits(required, upto(5))
    return {EXT: SPEC_EXT, "preferredInputLayout": "nchw", "maxTensorByteLength": 2**31 - 1,
            "input": io, "constant": io, "output": io, **ops}


# -- what opSupportLimits cannot say -------------------------------------------------------------
CHROMIUM_SRC = "chromium/chromium services/webnn/"
SPEC_EXT = {
    "name": "spec",
    "description": "What every WebNN implementation must support (the spec's required data "
                   "types and ranks)",
    "sources": ["WebNN spec (webmachinelearning/webnn index.bs), the 'required data types' and "
                "'required ranks' columns of every op's tensor-limits table (#910), as "
                "transcribed in converter/ops/spec_limits.json"],
    "notes": ["The spec leaves maxTensorByteLength and preferredInputLayout to the "
              "implementation; this target takes INT32_MAX bytes (the CoreML, 64-bit LiteRT and "
              "ONNX Runtime backends' limit) and nchw (the spec's default layout).",
              "Graph inputs, constants and outputs take every data type some op must support, "
              "up to rank 5 (the highest required rank)."],
}
LITERT_EXT = {
    "name": "chromium-litert",
    "description": "Chromium 153, WebNN on LiteRT/XNNPACK (CPU) on Linux: a real "
                   "opSupportLimits() dump",
    "sources": ["shared/targets/chromium-153-litert.opSupportLimits.json, copied out of the "
                "browser as it is",
                f"{BACKENDS_MD} (TFLite: GetContextProperties() in {CHROMIUM_SRC}"
                "tflite/graph_builder_tflite.cc) for the notes"],
    "constantOperands": {"gatherElements": ["indices"]},
    "notes": ["TFLite's GetContextProperties() declares no operand that must be constant, but "
              "build() refuses gatherElements with computed indices (NotSupportedError "
              "'gatherElements only supports constant indices', measured on this build with a "
              "grid_sample model); gather and gatherND take computed indices.",
              "The backend computes resample2d on channels-last axes [1, 2]; Chromium's "
              "renderer transposes other layouts to it.",
              "maxTensorByteLength is 1 GiB on 32-bit builds (this dump is 64-bit).",
              "int8 concat is listed, but build() fails ('Failed to allocate tensors') when an "
              "input is an int8 graph input or state, which carries no quantization parameters "
              "(the wake-word models): the int8_in_float pass concatenates int8 values in "
              "float32 between exact casts.",
              "build() refuses a constant of more than 128 MiB ('Buffer size is over inline "
              "limit'; tests/browser/test_chromium_runtime.py), below maxTensorByteLength: the "
              "split_constants pass cuts such a constant into pieces joined by concat.",
              "build() refuses pad in edge mode ('The edge padding mode is not supported in "
              "tflite schema'), at every rank and data type; reflection mode builds and "
              "computes numpy's reflect (tests/browser/test_rewrites_in_chromium.py): the "
              "pad_modes pass gathers the edge rows instead.",
              "clamp is listed for float32 and float16 only, and build() refuses it on "
              "integers; max and min take int8, uint8, int32 and int64: the int_clamp pass "
              "clamps integers with them."],
    "int8InFloat": ["concat"],
    "maxConstantByteLength": 128 * 2**20,
    "refusedOptions": {"pad": {"mode": ["edge"]}},
}
COREML_EXT = {
    "name": "coreml",
    "description": "Chromium's WebNN on Core ML (macOS 14, CoreML7 opset)",
    "sources": [f"{BACKENDS_MD} sections 1-3",
                f"{CHROMIUM_SRC}coreml/graph_builder_coreml.cc: GetContextProperties() (data "
                "types and ranks per operand) and the op builders (constant operands, "
                "emulations)"],
    "constantOperands": {
        "batchNormalization": ["mean", "variance", "scale", "bias"],
        "lstm": ["weight", "recurrentWeight", "bias", "recurrentBias", "peepholeWeight"],
        "lstmCell": ["weight", "recurrentWeight", "bias", "recurrentBias", "peepholeWeight"],
        "conv2d": ["bias"], "convTranspose2d": ["bias"],
        "layerNormalization": ["scale", "bias"], "instanceNormalization": ["scale", "bias"],
    },
    "emulated": {
        "gemm": "as matmul, mul and add",
        "hardSwish": "as hardSigmoid times the input",
        "gru": "step by step: gemm and activations per step, hidden states written with scatter",
        "gruCell": "as gemm and activations",
        "lstmCell": "on top of lstm",
        "isNaN": "as notEqual",
        "isInfinite": "as abs and equal",
        "neg": "with add and mul",
    },
    "notes": ["batchNormalization and lstm/lstmCell constant operands are enforced (build fails "
              "with NotSupportedError); conv2d/convTranspose2d bias and layer/instance "
              "normalization scale and bias are documented as constant (crbug.com/338529226) "
              "but passed as runtime inputs in the version read.",
              "dequantizeLinear with int4/uint4 input needs a constant input (macOS 15 "
              "blockwise path); macOS 15 also accepts int4/uint4 dequantizeLinear input and "
              "zeroPoint.",
              "Pool dilations other than 1 are rejected; ceil output rounding needs symmetric "
              "padding; layerNormalization axes must be sorted (and consecutive on CPU).",
              "Rank-5 batchNormalization is reshaped to rank 4 on non-CPU devices.",
              "The backend computes resample2d on axes [2, 3] and batchNormalization on axis "
              "1; Chromium's renderer transposes other layouts to them."],
}
DIRECTML_EXT = {
    "name": "directml",
    "description": "Chromium's WebNN on DirectML (Windows GPU/NPU), feature level {level}",
    "sources": [f"{BACKENDS_MD} sections 1-3",
                f"{CHROMIUM_SRC}dml/context_impl_dml.cc: ContextImplDml::GetProperties() at "
                "the feature level named in the description"],
    "emulated": {
        "notEqual": "as equal and logicalNot",
        "neg": "as identity", "expand": "as identity", "reshape": "as identity",
        "transpose": "as identity", "reverse": "as slice",
        "matmul": "as gemm, inputs flattened above rank 4",
    },
    "notes": ["Feature level 4.0 is the lowest Chromium accepts; later levels widen data types "
              "(regenerate with tools/gen_targets.py --dml-feature-level).",
              "Below feature level 5.1 gelu, softmax and triangular are emulated; below 6.2 "
              "hardSwish is."],
}
ONNXRUNTIME_EXT = {
    "name": "onnxruntime",
    "description": "Chromium's WebNN on ONNX Runtime / Windows ML",
    "sources": [f"{BACKENDS_MD} sections 1-3",
                f"{CHROMIUM_SRC}ort/context_impl_ort.cc: ContextImplOrt::GetContextProperties()"],
    "emulated": {"argMin": "int64 result cast to int32 when int32 is asked for",
                 "argMax": "int64 result cast to int32 when int32 is asked for"},
    "notes": ["resample2d is limited to channels-first axes when the execution provider "
              "needs the resample2d_limit_to_nchw workaround; this target assumes it does.",
              "The tensor byte length and rank limits are provisional in Chromium "
              "(crbug.com/412844034)."],
}


def write(name: str, doc: dict) -> Path:
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--litert-dump", type=Path, default=LITERT_DUMP)
    parser.add_argument("--dml-feature-level", default="4.0",
                        help="DirectML feature level of the directml target (4.0 ... 6.3)")
    args = parser.parse_args(argv)
    major, _, minor = args.dml_feature_level.partition(".")
    level = (int(major), int(minor or 0))
    OUT.mkdir(parents=True, exist_ok=True)
    dump = json.loads(args.litert_dump.read_text(encoding="utf-8"))
    written = [
        write("spec", spec_target()),
        write("chromium-litert", {EXT: LITERT_EXT, **dump}),
        write("coreml", backend_target(COREML, COREML_EXT)),
        write("directml", backend_target(directml_at(level), {
            **DIRECTML_EXT, "description": DIRECTML_EXT["description"].format(
                level=args.dml_feature_level)})),
        write("onnxruntime", backend_target(ONNXRUNTIME, ONNXRUNTIME_EXT)),
    ]
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
