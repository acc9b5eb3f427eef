"""Small .tflite models written straight from the TFLite schema, without TensorFlow.

    b = TfliteBuilder()
    x = b.input("x", [1, 8, 8, 3])
    w = b.constant("w", np.ones((4, 3, 3, 3), np.float32))
    y = b.tensor("y", [1, 8, 8, 4])
    b.op("CONV_2D", [x, w, -1], [y], padding=SAME, strideW=1, strideH=1)
    data = b.build(outputs=[y])            # the .tflite bytes

    data = one_op("ADD", [Input("a", [2, 3]), Const(np.ones(3, np.float32))],
                  [Output("y", [2, 3])], fusedActivationFunction=RELU)

Models are assembled with the schema's object API (ModelT, SubGraphT, TensorT, OperatorT,
BufferT) and packed with `builder.Finish(model.Pack(builder), b"TFL3")`. Nothing here comes
from an exporter: these files are what the importer and LiteRT are both fed, so they must
follow the schema and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

__all__ = ["TfliteBuilder", "Input", "Const", "Output", "Variable", "Quant", "one_op",
           "sparse_parameters", "flexbuffer_map", "pool_params", "SAME", "VALID", "RELU",
           "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT", "OPTIONS"]

SAME, VALID = schema.Padding.SAME, schema.Padding.VALID
_A = schema.ActivationFunctionType
RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT = _A.RELU, _A.RELU_N1_TO_1, _A.RELU6, _A.TANH, \
    _A.SIGN_BIT

_TYPES = {
    "float32": (schema.TensorType.FLOAT32, np.float32),
    "float16": (schema.TensorType.FLOAT16, np.float16),
    "int32": (schema.TensorType.INT32, np.int32),
    "uint8": (schema.TensorType.UINT8, np.uint8),
    "int64": (schema.TensorType.INT64, np.int64),
    "bool": (schema.TensorType.BOOL, np.bool_),
    "int16": (schema.TensorType.INT16, np.int16),
    "int8": (schema.TensorType.INT8, np.int8),
    "uint32": (schema.TensorType.UINT32, np.uint32),
    "uint64": (schema.TensorType.UINT64, np.uint64),
    "float64": (schema.TensorType.FLOAT64, np.float64),
    "complex64": (schema.TensorType.COMPLEX64, np.complex64),
    # A variable's handle (VAR_HANDLE's result): no values, so no numpy type.
    "resource": (schema.TensorType.RESOURCE, None),
}

# Each builtin op's options table (the union member of BuiltinOptions), for ops that have one.
OPTIONS: dict[str, str] = {
    "ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions",
    "CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions", "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions", "BATCH_MATMUL": "BatchMatMulOptions",
    "CONCATENATION": "ConcatenationOptions", "RESHAPE": "ReshapeOptions",
    "SQUEEZE": "SqueezeOptions", "STRIDED_SLICE": "StridedSliceOptions",
    "SPLIT": "SplitOptions", "SPLIT_V": "SplitVOptions", "PACK": "PackOptions",
    "UNPACK": "UnpackOptions", "GATHER": "GatherOptions", "SOFTMAX": "SoftmaxOptions",
    "LEAKY_RELU": "LeakyReluOptions", "GELU": "GeluOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "MIRROR_PAD": "MirrorPadOptions", "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions",
    "CUMSUM": "CumsumOptions", "CAST": "CastOptions", "SHAPE": "ShapeOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "LOCAL_RESPONSE_NORMALIZATION": "LocalResponseNormalizationOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions", "ONE_HOT": "OneHotOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions", "REDUCE_PROD": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions", "REDUCE_ALL": "ReducerOptions",
    "CALL_ONCE": "CallOnceOptions", "VAR_HANDLE": "VarHandleOptions",
    "WHILE": "WhileOptions", "IF": "IfOptions",
}


@dataclass
class Quant:
    """Affine quantization parameters: real = (q - zero_point) * scale (along `axis`)."""

    scale: Sequence[float]
    zero_point: Sequence[int]
    axis: int = 0


@dataclass
class Input:
    """A subgraph input."""

    name: str
    shape: Sequence[int]
    dtype: str = "float32"
    quant: Quant | None = None


@dataclass
class Const:
    """A constant tensor (its value is stored in a buffer)."""

    value: np.ndarray
    dtype: str | None = None
    quant: Quant | None = None
    name: str | None = None


@dataclass
class Variable:
    """A variable tensor without data (a recurrent op's state, zero at the start)."""

    shape: Sequence[int]
    dtype: str = "float32"
    name: str | None = None


@dataclass
class Output:
    name: str
    shape: Sequence[int]
    dtype: str = "float32"
    quant: Quant | None = None


class TfliteBuilder:
    """Assembles one subgraph (and optionally more, for control-flow fixtures)."""

    def __init__(self, description: str = "webnn-converter test fixture"):
        self.description = description
        self.buffers: list[schema.BufferT] = [schema.BufferT()]  # buffer 0: empty, by custom
        self.codes: dict[tuple[int, str | None], int] = {}
        self.code_list: list[schema.OperatorCodeT] = []
        self.subgraphs: list[schema.SubGraphT] = [self._subgraph("main")]
        self.external: set[int] = set()
        self.current = self.subgraphs[0]

    @staticmethod
    def _subgraph(name: str) -> schema.SubGraphT:
        sg = schema.SubGraphT()
        sg.name, sg.tensors, sg.operators, sg.inputs, sg.outputs = name, [], [], [], []
        return sg

    # -- tensors -------------------------------------------------------------------------
    def _tensor(self, name: str, shape, dtype: str, quant: Quant | None, buffer: int = 0,
                variable: bool = False) -> int:
        t = schema.TensorT()
        t.name = name
        t.shape = [int(d) for d in shape]
        t.type = _TYPES[dtype][0]
        t.buffer = buffer
        t.isVariable = variable
        if quant is not None:
            q = schema.QuantizationParametersT()
            q.scale = [float(s) for s in np.atleast_1d(quant.scale)]
            q.zeroPoint = [int(z) for z in np.atleast_1d(quant.zero_point)]
            q.quantizedDimension = quant.axis
            t.quantization = q
        self.current.tensors.append(t)
        return len(self.current.tensors) - 1

    def input(self, name: str, shape, dtype: str = "float32", quant: Quant | None = None) -> int:
        index = self._tensor(name, shape, dtype, quant)
        self.current.inputs.append(index)
        return index

    def tensor(self, name: str, shape, dtype: str = "float32", quant: Quant | None = None,
               variable: bool = False) -> int:
        return self._tensor(name, shape, dtype, quant, variable=variable)

    def buffer(self, data: bytes | np.ndarray, *, external: bool = False) -> int:
        b = schema.BufferT()
        b.data = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray)
                               else np.ascontiguousarray(data).tobytes(), np.uint8)
        self.buffers.append(b)
        if external:
            self.external.add(len(self.buffers) - 1)
        return len(self.buffers) - 1

    def constant(self, name: str, value: np.ndarray, dtype: str | None = None,
                 quant: Quant | None = None, *, external: bool = False, sparsity=None,
                 stored: np.ndarray | None = None) -> int:
        """A constant; `stored` replaces the buffer's contents (the values of a sparse tensor,
        or deliberately wrong bytes)."""
        value = np.asarray(value)
        dtype = dtype or {np.dtype(v): k for k, (_, v) in _TYPES.items()}[value.dtype]
        data = value.astype(_TYPES[dtype][1]) if stored is None else stored
        index = self._tensor(name, value.shape, dtype, quant, self.buffer(data, external=external))
        if sparsity is not None:
            self.current.tensors[index].sparsity = sparsity
        return index

    # -- operators -------------------------------------------------------------------------
    def op(self, code: str, inputs: Sequence[int], outputs: Sequence[int], *,
           custom_options: bytes | None = None, version: int = 1, **options) -> None:
        """Add an operator; keyword arguments are fields of the op's options table."""
        if code.startswith("CUSTOM:"):
            key = (schema.BuiltinOperator.CUSTOM, code[len("CUSTOM:"):])
        else:
            key = (getattr(schema.BuiltinOperator, code), None)
        if key not in self.codes:
            oc = schema.OperatorCodeT()
            oc.builtinCode = key[0]
            oc.deprecatedBuiltinCode = min(key[0], schema.BuiltinOperator
                                           .PLACEHOLDER_FOR_GREATER_OP_CODES)
            oc.customCode = key[1]
            oc.version = version
            self.codes[key] = len(self.code_list)
            self.code_list.append(oc)
        op = schema.OperatorT()
        op.opcodeIndex = self.codes[key]
        op.inputs = [int(i) for i in inputs]
        op.outputs = [int(i) for i in outputs]
        table = OPTIONS.get(code)
        if table is not None:
            opts = getattr(schema, table + "T")()
            for field, value in options.items():
                if not hasattr(opts, field):
                    raise TypeError(f"{table} has no field {field!r}")
                setattr(opts, field, value)
            op.builtinOptionsType = getattr(schema.BuiltinOptions, table)
            op.builtinOptions = opts
        elif options:
            raise TypeError(f"{code} takes no options here (add it to OPTIONS)")
        if custom_options is not None:
            op.customOptions = list(custom_options)
        self.current.operators.append(op)

    def add_subgraph(self, name: str) -> None:
        """Start another subgraph (tensors and ops added next go there)."""
        self.subgraphs.append(self._subgraph(name))
        self.current = self.subgraphs[-1]

    # -- writing ---------------------------------------------------------------------------
    def build(self, outputs: Sequence[int] = (), *, identifier: bytes = b"TFL3",
              version: int = 3) -> bytes:
        """The model's bytes; `outputs` are the main subgraph's outputs. Buffers marked
        external are stored after the flatbuffer, located by offset and size."""
        if outputs:
            self.subgraphs[0].outputs = [int(o) for o in outputs]
        if not self.external:
            return self._pack(identifier, version)
        moved = {i: self.buffers[i].data for i in self.external}
        for i in moved:  # a placeholder of the same width, so the flatbuffer's size is final
            self.buffers[i].data, self.buffers[i].offset = None, 1 << 40
            self.buffers[i].size = len(moved[i])
        head = self._pack(identifier, version)
        position, tail = _align(len(head)), b""
        for i in sorted(moved):
            tail += b"\0" * (position - len(head) - len(tail))
            self.buffers[i].offset = position
            position = _align(position + len(moved[i]))
            tail += moved[i].tobytes()
        head2 = self._pack(identifier, version)
        assert len(head2) == len(head)
        for i, data in moved.items():  # leave the builder as it was
            self.buffers[i].data, self.buffers[i].offset, self.buffers[i].size = data, 0, 0
        return head2 + tail

    def _pack(self, identifier: bytes, version: int) -> bytes:
        model = schema.ModelT()
        model.version = version
        model.description = self.description
        model.operatorCodes = self.code_list
        model.subgraphs = self.subgraphs
        model.buffers = self.buffers
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), identifier)
        return bytes(builder.Output())

    def save(self, path: str | Path, outputs: Sequence[int] = ()) -> Path:
        path = Path(path)
        path.write_bytes(self.build(outputs))
        return path


def _align(n: int, to: int = 16) -> int:
    return (n + to - 1) // to * to


def one_op(code: str, inputs: Sequence[Input | Const | Variable | None],
           outputs: Sequence[Output], *, custom_options: bytes | None = None,
           **options) -> bytes:
    """A model of one operator: Input entries become subgraph inputs, Const entries constants,
    None an omitted optional input (-1)."""
    b = TfliteBuilder()
    slots = []
    for i, spec in enumerate(inputs):
        if spec is None:
            slots.append(-1)
        elif isinstance(spec, Input):
            slots.append(b.input(spec.name, spec.shape, spec.dtype, spec.quant))
        elif isinstance(spec, Variable):
            slots.append(b.tensor(spec.name or f"state{i}", spec.shape, spec.dtype,
                                  variable=True))
        else:
            slots.append(b.constant(spec.name or f"const{i}", spec.value, spec.dtype,
                                    spec.quant))
    outs = [b.tensor(o.name, o.shape, o.dtype, o.quant) for o in outputs]
    b.op(code, slots, outs, custom_options=custom_options, **options)
    return b.build(outs)


def flexbuffer_map(entries: dict) -> bytes:
    """Custom options as a flexbuffer map, as MediaPipe's converter writes them: ints, floats,
    strings, and lists of ints as typed vectors (what its kernels read with AsTypedVector)."""
    from flatbuffers import flexbuffers

    fb = flexbuffers.Builder()
    with fb.Map():
        for key, value in entries.items():
            fb.Key(key)
            if isinstance(value, bool) or isinstance(value, (int, np.integer)):
                fb.Int(int(value))
            elif isinstance(value, (float, np.floating)):
                fb.Float(float(value))
            elif isinstance(value, str):
                fb.String(value)
            else:
                fb.TypedVectorFromElements([int(v) for v in value])
    return bytes(fb.Finish())


def pool_params(padding: int, stride_w: int, stride_h: int, filter_w: int, filter_h: int,
                activation: int = 0) -> bytes:
    """A TfLitePoolParams struct as raw custom options (MediaPipe's pooling ops): padding
    (1 SAME, 2 VALID), strides, filter size, fused activation, then the four int32 of computed
    padding the runtime fills in."""
    return np.array([padding, stride_w, stride_h, filter_w, filter_h, activation, 0, 0, 0, 0],
                    "<i4").tobytes()


def sparse_parameters(dense: np.ndarray, block: int = 1):
    """(SparsityParametersT, stored values) for `dense` in TFLite's sparse format: every
    dimension DENSE except the last, SPARSE_CSR over blocks of `block` elements (a block is
    stored when any of its elements is nonzero; block > 1 adds a dense block level)."""
    dense = np.asarray(dense)
    rank = dense.ndim
    last = dense.shape[-1]
    if last % block:
        raise ValueError(f"block {block} does not divide the last dimension {last}")
    rows = dense.reshape(-1, last // block, block)
    segments, indices, values = [0], [], []
    for row in rows:
        for j, blk in enumerate(row):
            if np.any(blk != 0):
                indices.append(j)
                values.append(blk)
        segments.append(len(indices))
    sp = schema.SparsityParametersT()
    sp.traversalOrder = list(range(rank)) + ([rank] if block > 1 else [])
    sp.blockMap = [rank - 1] if block > 1 else None
    levels = []
    for d in range(rank - 1):
        m = schema.DimensionMetadataT()
        m.format, m.denseSize = schema.DimensionType.DENSE, dense.shape[d]
        levels.append(m)
    csr = schema.DimensionMetadataT()
    csr.format = schema.DimensionType.SPARSE_CSR
    csr.arraySegmentsType = schema.SparseIndexVector.Int32Vector
    csr.arraySegments = schema.Int32VectorT()
    csr.arraySegments.values = segments
    csr.arrayIndicesType = schema.SparseIndexVector.Uint8Vector
    csr.arrayIndices = schema.Uint8VectorT()
    csr.arrayIndices.values = indices
    levels.append(csr)
    if block > 1:
        m = schema.DimensionMetadataT()
        m.format, m.denseSize = schema.DimensionType.DENSE, block
        levels.append(m)
    sp.dimMetadata = levels
    stored = np.concatenate(values).astype(dense.dtype) if values else np.zeros(0, dense.dtype)
    return sp, stored
