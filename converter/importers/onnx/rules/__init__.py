"""ONNX import rules, one module per op family.

A module is imported the first time a model needs one of its ops (`load_for`, which the
registry's `rule_for` calls), so a conversion does not pay at start-up for the families its
model does not use. `load_all()` imports every one (the op catalogue, `known_op_types`). The
table below says which module registers which op type ("domain:OpType" outside the default
domain); tests/importers/onnx/test_rule_loading.py checks it against what the modules
register, and an op type it does not list makes `load_for` import every module, so a stale
table costs time, never a rule.
"""
from __future__ import annotations

from importlib import import_module

__all__ = ["load_for", "load_all", "FAMILIES"]

_OPS_BY_MODULE: dict[str, tuple[str, ...]] = {
    "activation": (
        "Celu", "Clip", "Elu", "Gelu", "HardSigmoid", "HardSwish", "Hardmax", "LeakyRelu",
        "LogSoftmax", "Mish", "PRelu", "Relu", "Selu", "Shrink", "Sigmoid", "Softmax",
        "Softplus", "Softsign", "Swish", "Tanh", "ThresholdedRelu",
    ),
    "attention": (
        "Attention", "com.microsoft:GroupQueryAttention", "com.microsoft:MultiHeadAttention",
    ),
    "constants": (
        "Constant", "ConstantOfShape", "EyeLike", "RandomNormal", "RandomUniform", "Range",
        "Shape", "Size",
    ),
    "contrib": (
        "RMSNormalization", "SimplifiedLayerNormalization", "com.microsoft:BiasGelu",
        "com.microsoft:FastGelu", "com.microsoft:FusedMatMul", "com.microsoft:Gelu",
        "com.microsoft:QuickGelu", "com.microsoft:SimplifiedLayerNormalization",
        "com.microsoft:SkipLayerNormalization",
        "com.microsoft:SkipSimplifiedLayerNormalization",
    ),
    "control_flow": (
        "If", "Loop", "Scan",
    ),
    "conv": (
        "Conv", "ConvInteger", "ConvTranspose",
    ),
    "dynamic_quantization": (
        "com.microsoft:DynamicQuantizeLSTM", "com.microsoft:DynamicQuantizeMatMul",
        "com.microsoft:MatMulIntegerToFloat",
    ),
    "elementwise": (
        "Abs", "Acosh", "Add", "And", "Asinh", "Atanh", "Cast", "CastLike", "Ceil", "Cos",
        "Cosh", "Div", "Equal", "Erf", "Exp", "Floor", "Greater", "GreaterOrEqual", "Identity",
        "IsInf", "IsNaN", "Less", "LessOrEqual", "Log", "Max", "Mean", "Min", "Mod", "Mul",
        "Neg", "Not", "Or", "Pow", "Reciprocal", "Round", "Sign", "Sin", "Sinh", "Sqrt", "Sub",
        "Sum", "Tan", "Where", "Xor",
    ),
    "functions": (
        "CausalConvWithState", "LinearAttention", "SwiGLU",
    ),
    "indexing": (
        "ArgMax", "ArgMin", "Compress", "Gather", "GatherElements", "GatherND", "NonZero",
        "OneHot", "ReverseSequence", "Scatter", "ScatterElements", "ScatterND", "TensorScatter",
        "TopK",
    ),
    "integer_math": (
        "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor",
    ),
    "losses": (
        "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
    ),
    "matmul": (
        "Einsum", "Gemm", "MatMul", "MatMulInteger",
    ),
    "normalization": (
        "BatchNormalization", "GroupNormalization", "InstanceNormalization", "LRN",
        "LayerNormalization", "LpNormalization", "MeanVarianceNormalization",
    ),
    "pool": (
        "AveragePool", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "LpPool",
        "MaxPool", "MaxUnpool",
    ),
    "quantization": (
        "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
        "QuantizeLinear", "com.microsoft:MatMulNBits",
    ),
    "recurrent": (
        "GRU", "LSTM", "RNN",
    ),
    "reduction": (
        "CumProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
        "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
    ),
    "regions": (
        "CenterCropPad", "Col2Im",
    ),
    "resize": (
        "DepthToSpace", "Resize", "SpaceToDepth", "Upsample",
    ),
    "rotary": (
        "RotaryEmbedding", "com.microsoft:RotaryEmbedding",
    ),
    "sampling": (
        "AffineGrid", "GridSample",
    ),
    "shape_ops": (
        "Concat", "CumSum", "Dropout", "Expand", "Flatten", "Pad", "Reshape", "Slice", "Split",
        "Squeeze", "Tile", "Transpose", "Trilu", "Unsqueeze",
    ),
    "spectral": (
        "BlackmanWindow", "DFT", "HammingWindow", "HannWindow", "MelWeightMatrix", "STFT",
    ),
}

FAMILIES = tuple(_OPS_BY_MODULE)
_MODULE_OF = {op: module for module, ops in _OPS_BY_MODULE.items() for op in ops}
_loaded: set[str] = set()


def _load(module: str) -> None:
    if module not in _loaded:
        import_module(f"{__name__}.{module}")
        _loaded.add(module)


def load_for(domain: str, op_type: str) -> None:
    """Import the module registering `op_type` of `domain` ("" for the default domain); every
    module when the table does not know the op (an op no rule imports, or a stale table)."""
    module = _MODULE_OF.get(f"{domain}:{op_type}" if domain else op_type)
    if module is None:
        load_all()
    else:
        _load(module)


def load_all() -> None:
    """Import every rule module (registering every rule)."""
    for module in FAMILIES:
        _load(module)
