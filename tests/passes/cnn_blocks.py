"""Generated ONNX models of three CNN families (onnx.helper, NCHW as PyTorch exports them),
for the layout pass's order-free patterns: PoolFormer (GroupNorm, one group as timm has it or
several, exported as reshape -> InstanceNormalization -> reshape back, or as
GroupNormalization), ConvNeXt (a
depthwise conv, then permute -> LayerNorm -> MLP -> permute back; channels-first LayerNorm
written out with ReduceMean) and MobileViT (convs, unfold into patches, attention, fold).
The shapes follow the PyTorch modules (timm's PoolFormer/ConvNeXt, Apple's MobileViT), at a
small size."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Model:
    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.nodes: list = []
        self.inits: list = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, array, stem="c") -> str:
        name = self.fresh(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, *shape, scale=0.3) -> str:
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), "w")

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs):
        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k=1, stride=1, group=1):
        pad = k // 2
        return self.node("Conv", [x, self.weight(cout, cin // group, k, k),
                                  self.weight(cout, scale=0.1)],
                         kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                         group=group)

    def gelu(self, x):
        # GELU as torch exports it below opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))
        scaled = self.node("Div", [x, self.const(np.float32(np.sqrt(2.0)))])
        one = self.node("Add", [self.node("Erf", [scaled]), self.const(np.float32(1.0))])
        return self.node("Mul", [self.node("Mul", [x, one]), self.const(np.float32(0.5))])

    def model(self, x_shape, out, opset=17) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        return model


# -- PoolFormer ----------------------------------------------------------------------------------
def _group_norm(m: _Model, x, c, shape, form, groups=1):
    """nn.GroupNorm(groups, c): statistics over c / groups * h * w per sample and group."""
    if form == "instance":  # torch.onnx's TorchScript exporter
        flat = m.node("Reshape", [x, m.const(np.array([shape[0], groups, -1], np.int64))])
        normed = m.node("InstanceNormalization", [flat, m.const(np.ones(groups, np.float32)),
                                                  m.const(np.zeros(groups, np.float32))],
                        epsilon=1e-5)
        y = m.node("Reshape", [normed, m.const(np.array(shape, np.int64))])
    else:  # GroupNormalization (opset 21: scale and bias per channel)
        return m.node("GroupNormalization", [x, m.weight(c), m.weight(c, scale=0.1)],
                      num_groups=groups, epsilon=1e-5)
    y = m.node("Mul", [y, m.weight(c, 1, 1)])
    return m.node("Add", [y, m.weight(c, 1, 1, scale=0.1)])


def poolformer(form: str = "instance", blocks: int = 2, c: int = 8, size: int = 6,
               groups: int = 1) -> onnx.ModelProto:
    m = _Model(f"poolformer_{form}_{groups}")
    shape = [1, c, size, size]
    x = m.conv("x", 3, c, k=3, stride=2)
    for _ in range(blocks):
        n = _group_norm(m, x, c, shape, form, groups)
        pooled = m.node("AveragePool", [n], kernel_shape=[3, 3], strides=[1, 1],
                        pads=[1, 1, 1, 1], count_include_pad=0)
        mixed = m.node("Sub", [pooled, n])
        x = m.node("Add", [x, m.node("Mul", [mixed, m.weight(c, 1, 1)])])
        n = _group_norm(m, x, c, shape, form, groups)
        hidden = m.gelu(m.conv(n, c, 2 * c))
        x = m.node("Add", [x, m.node("Mul", [m.conv(hidden, 2 * c, c), m.weight(c, 1, 1)])])
    pooled = m.node("GlobalAveragePool", [x])
    flat = m.node("Flatten", [pooled], axis=1)
    out = m.node("Gemm", [flat, m.weight(5, c), m.weight(5)], transB=1)
    return m.model([1, 3, 2 * size, 2 * size], out, opset=21 if form == "group" else 17)


# -- ConvNeXt ------------------------------------------------------------------------------------
def _layer_norm_channels_first(m: _Model, x, c):
    """timm's LayerNorm2d written out: normalise over the channel axis with ReduceMean."""
    mean = m.node("ReduceMean", [x, m.const(np.array([1], np.int64))], keepdims=1)
    centered = m.node("Sub", [x, mean])
    var = m.node("ReduceMean", [m.node("Mul", [centered, centered]),
                                m.const(np.array([1], np.int64))], keepdims=1)
    std = m.node("Sqrt", [m.node("Add", [var, m.const(np.float32(1e-6))])])
    y = m.node("Div", [centered, std])
    return m.node("Add", [m.node("Mul", [y, m.weight(c, 1, 1)]), m.weight(c, 1, 1, scale=0.1)])


def convnext(blocks: int = 2, c: int = 8, size: int = 8) -> onnx.ModelProto:
    m = _Model("convnext")
    x = _layer_norm_channels_first(m, m.conv("x", 3, c, k=2, stride=2), c)  # stem
    for _ in range(blocks):
        y = m.conv(x, c, c, k=7, group=c)  # depthwise
        y = m.node("Transpose", [y], perm=[0, 2, 3, 1])
        y = m.node("LayerNormalization", [y, m.weight(c), m.weight(c, scale=0.1)], axis=-1,
                   epsilon=1e-6)
        y = m.node("Add", [m.node("MatMul", [y, m.weight(c, 4 * c)]), m.weight(4 * c)])
        y = m.gelu(y)
        y = m.node("Add", [m.node("MatMul", [y, m.weight(4 * c, c)]), m.weight(c)])
        y = m.node("Mul", [y, m.weight(c)])
        x = m.node("Add", [x, m.node("Transpose", [y], perm=[0, 3, 1, 2])])
    x = m.conv(_layer_norm_channels_first(m, x, c), c, 2 * c, k=2, stride=2)  # downsample
    pooled = m.node("ReduceMean", [x, m.const(np.array([2, 3], np.int64))], keepdims=0)
    out = m.node("LayerNormalization", [pooled, m.weight(2 * c), m.weight(2 * c)], axis=-1)
    return m.model([1, 3, 2 * size, 2 * size], out, opset=18)


# -- MobileViT -----------------------------------------------------------------------------------
def mobilevit(c: int = 8, d: int = 16, size: int = 8, patch: int = 2) -> onnx.ModelProto:
    m = _Model("mobilevit")
    x = m.conv("x", 3, c, k=3, stride=2)
    local = m.conv(m.conv(x, c, c, k=3), c, d)
    # unfold: [B, D, H, W] -> [B * P, N, D] (Apple's MobileViTBlock.unfolding)
    nh = nw = size // patch
    n, p = nh * nw, patch * patch
    y = m.node("Reshape", [local, m.const(np.array([d * nh, patch, nw, patch], np.int64))])
    y = m.node("Transpose", [y], perm=[0, 2, 1, 3])
    y = m.node("Reshape", [y, m.const(np.array([1, d, n, p], np.int64))])
    y = m.node("Transpose", [y], perm=[0, 3, 2, 1])
    tokens = m.node("Reshape", [y, m.const(np.array([p, n, d], np.int64))])
    # one pre-norm attention layer
    h = m.node("LayerNormalization", [tokens, m.weight(d), m.weight(d, scale=0.1)], axis=-1)
    q, k, v = (m.node("MatMul", [h, m.weight(d, d)]) for _ in range(3))
    scores = m.node("MatMul", [q, m.node("Transpose", [k], perm=[0, 2, 1])])
    scores = m.node("Mul", [scores, m.const(np.float32(d ** -0.5))])
    attended = m.node("MatMul", [m.node("Softmax", [scores], axis=-1), v])
    tokens = m.node("Add", [tokens, m.node("MatMul", [attended, m.weight(d, d)])])
    # fold: the inverse
    y = m.node("Reshape", [tokens, m.const(np.array([1, p, n, d], np.int64))])
    y = m.node("Transpose", [y], perm=[0, 3, 2, 1])
    y = m.node("Reshape", [y, m.const(np.array([d * nh, nw, patch, patch], np.int64))])
    y = m.node("Transpose", [y], perm=[0, 2, 1, 3])
    y = m.node("Reshape", [y, m.const(np.array([1, d, size, size], np.int64))])
    fused = m.conv(m.node("Concat", [x, m.conv(y, d, c)], axis=1), 2 * c, c, k=3)
    return m.model([1, 3, 2 * size, 2 * size], fused, opset=17)
