"""Models the verification tests share: a small ONNX CNN with every mutable feature, and
light_resnet50 (seeded weights, 176 WebNN operations)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

from converter.testing.light_models import light_model


def small_cnn(path):
    """Conv (3x3, stride 2, padding only at the end, bias) -> Relu -> MaxPool, plus a 1x1 conv
    branch, Add, a 3x3 conv, GlobalAveragePool -> Flatten -> Gemm (bias) -> Softmax."""
    rng = np.random.default_rng(7)

    def init(name, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        value = rng.standard_normal(shape) * (scale or np.sqrt(2.0 / fan_in))
        return nh.from_array(value.astype(np.float32), name)

    inits = [init("w1", 8, 3, 3, 3), init("b1", 8, scale=0.5), init("w2", 8, 3, 1, 1),
             init("w3", 8, 8, 3, 3), init("b3", 8, scale=0.5), init("fc", 10, 8),
             init("fcb", 10, scale=0.5)]
    nodes = [
        H.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[0, 0, 1, 1],
                    kernel_shape=[3, 3], name="conv1"),
        H.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        H.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        H.make_node("Conv", ["x", "w2"], ["c2"], strides=[4, 4], name="branch"),
        H.make_node("Add", ["p1", "c2"], ["s"], name="residual"),
        H.make_node("Conv", ["s", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], name="conv3"),
        H.make_node("GlobalAveragePool", ["c3"], ["g"], name="gap"),
        H.make_node("Flatten", ["g"], ["f"], name="flatten"),
        H.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1, name="fc"),
        H.make_node("Softmax", ["logits"], ["y"], axis=1, name="softmax"),
    ]
    graph = H.make_graph(nodes, "small_cnn",
                         [H.make_tensor_value_info("x", TP.FLOAT, [1, 3, 32, 32])],
                         [H.make_tensor_value_info("y", TP.FLOAT, [1, 10])], inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="session")
def small_model(tmp_path_factory):
    return small_cnn(tmp_path_factory.mktemp("small") / "small_cnn.onnx")


@pytest.fixture(scope="session")
def resnet50(tmp_path_factory):
    return light_model("resnet50", tmp_path_factory.mktemp("light"), seed=0)
