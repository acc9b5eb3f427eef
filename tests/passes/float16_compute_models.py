"""One small float32 ONNX model per op family the float16_compute pass rewrites, built with
onnx.helper, and what the pass should make of it: the WebNN op types that compute in float16
and those kept float32 (normalizations, softmax, summing reductions; a comparison of graph
inputs). Weights are seeded and large enough (>= 4,096 values where it matters) that
fold_constants leaves the ops on them alone."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


@dataclass
class Family:
    name: str
    nodes: list
    inputs: dict[str, tuple]  # name -> shape, every input and output float32
    outputs: dict[str, tuple]
    inits: dict[str, np.ndarray]
    float16: set[str]  # WebNN op types whose results are float16 after the pass
    float32: set[str]  # WebNN op types the pass keeps float32

    def save(self, folder: Path) -> Path:
        def info(name, shape):
            return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))

        graph = helper.make_graph(
            self.nodes, self.name, [info(n, s) for n, s in self.inputs.items()],
            [info(n, s) for n, s in self.outputs.items()],
            [numpy_helper.from_array(a, n) for n, a in self.inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = folder / f"{self.name}.onnx"
        onnx.save(model, str(path))
        return path


def _w(rng, *shape, scale=0.2) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def families() -> list[Family]:
    rng = np.random.default_rng(7)
    n = helper.make_node
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    return [
        Family("conv", [n("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                        n("Relu", ["c"], ["y"])],
               {"x": (1, 8, 12, 12)}, {"y": (1, 16, 12, 12)},
               {"w": _w(rng, 16, 8, 3, 3), "b": _w(rng, 16)}, {"conv2d", "relu"}, set()),
        Family("matmul", [n("MatMul", ["x", "w"], ["m"]), n("Add", ["m", "b"], ["a"]),
                          n("Tanh", ["a"], ["y"])],
               {"x": (4, 64)}, {"y": (4, 96)}, {"w": _w(rng, 64, 96), "b": _w(rng, 96)},
               {"matmul", "add", "tanh"}, set()),
        Family("gemm", [n("Gemm", ["x", "w", "b"], ["g"], transB=1),
                        n("Sigmoid", ["g"], ["y"])],
               {"x": (4, 64)}, {"y": (4, 80)}, {"w": _w(rng, 80, 64), "b": _w(rng, 80)},
               {"gemm", "sigmoid"}, set()),
        Family("elementwise", [n("Mul", ["x", "z"], ["m"]), n("Sub", ["m", "z"], ["s"]),
                               n("Abs", ["s"], ["a"]), n("Sqrt", ["a"], ["q"]),
                               n("Div", ["q", "d"], ["y"])],
               {"x": (2, 3, 16, 16), "z": (2, 3, 16, 16)}, {"y": (2, 3, 16, 16)},
               {"d": np.full((16,), 1.5, np.float32) + _w(rng, 16, scale=0.1)},
               {"mul", "sub", "abs", "sqrt", "div"}, set()),
        Family("pool", [n("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                        n("AveragePool", ["p"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
               {"x": (1, 4, 16, 16)}, {"y": (1, 4, 8, 8)}, {},
               {"maxPool2d", "averagePool2d"}, set()),
        Family("shape", [n("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                         n("Reshape", ["t", "shape"], ["r"]),
                         n("Concat", ["r", "r"], ["c"], axis=1),
                         n("Slice", ["c", "starts", "ends", "axes"], ["y"])],
               {"x": (2, 6, 8)}, {"y": (2, 40)},
               {"shape": i64(2, 48), "starts": i64(8), "ends": i64(48), "axes": i64(1)},
               {"transpose", "concat", "slice"}, set()),
        Family("gather", [n("Gather", ["x", "idx"], ["g"], axis=0), n("Neg", ["g"], ["y"])],
               {"x": (10, 32)}, {"y": (3, 32)}, {"idx": i64(4, 0, 9)},
               {"gather", "neg"}, set()),
        Family("compare_where", [n("Greater", ["x", "z"], ["c"]),
                                 n("Where", ["c", "x", "z"], ["y"])],
               {"x": (4, 32), "z": (4, 32)}, {"y": (4, 32)}, {},
               {"where"}, {"greater"}),
        Family("split", [n("Split", ["x", "sizes"], ["a", "b"], axis=1),
                         n("Mul", ["a", "b"], ["y"])],
               {"x": (4, 64)}, {"y": (4, 32)}, {"sizes": i64(32, 32)}, {"split", "mul"}, set()),
        Family("gru", [n("GRU", ["x", "w", "r", "b"], ["all", "last"], hidden_size=16)],
               {"x": (5, 2, 8)}, {"all": (5, 1, 2, 16), "last": (1, 2, 16)},
               {"w": _w(rng, 1, 48, 8, scale=0.3), "r": _w(rng, 1, 48, 16, scale=0.3),
                "b": _w(rng, 1, 96, scale=0.1)}, {"gru"}, set()),
        Family("layer_norm", [n("MatMul", ["x", "w"], ["m"]),
                              n("LayerNormalization", ["m", "g", "b"], ["y"], axis=-1)],
               {"x": (4, 64)}, {"y": (4, 128)},
               {"w": _w(rng, 64, 128), "g": 1 + _w(rng, 128, scale=0.1), "b": _w(rng, 128)},
               {"matmul"}, {"layerNormalization"}),
        Family("softmax", [n("MatMul", ["x", "w"], ["m"]), n("Softmax", ["m"], ["y"], axis=-1)],
               {"x": (4, 64)}, {"y": (4, 100)}, {"w": _w(rng, 64, 100)},
               {"matmul"}, {"softmax"}),
        Family("reductions", [n("Relu", ["x"], ["r"]),
                              n("ReduceMax", ["r"], ["mx"], axes=[1], keepdims=1),
                              n("ReduceMean", ["r"], ["mean"], axes=[1], keepdims=1),
                              n("Add", ["mx", "mean"], ["y"])],
               {"x": (4, 256)}, {"y": (4, 1)}, {},
               {"relu", "reduceMax"}, {"reduceMean"}),
    ]
