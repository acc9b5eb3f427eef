"""Helpers the layout-pass tests share."""
from __future__ import annotations
import numpy as np
import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.targets import Target

NHWC_TO_NCHW = [0, 3, 1, 2]
NCHW_TO_NHWC = [0, 2, 3, 1]

def layout_pass(graph, layout: str | None, io: str | None = None):
    t = None if layout is None else Target(name="t", limits={"preferredInputLayout": layout})
    [(_, result)] = run_passes(graph, ["layout"], PassContext(target=t, io_layout=io))
    return result


def seeded(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def feeds_for(graph, seed=1) -> dict:
    return {name: np.random.default_rng(seed + i).random(x.shape, dtype=np.float32)
            for i, (name, x) in enumerate(graph.inputs.items())}


def same_values(got: dict, want: dict, ulp: int = 16) -> None:
    """Equal shapes; integers exact; floats within `ulp` ULP, or (near zero, where summing in
    another order cancels differently) within ulp * epsilon of the output's largest value."""
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        assert g.shape == w.shape and g.dtype == w.dtype, key
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=key)
            continue
        eps = float(np.finfo(w.dtype).eps)
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=ulp * eps, atol=ulp * eps * scale, err_msg=key)


def check_numbers(build, layout, io=None, inputs=None, outputs=None):
    """Run build() before and after the pass. `inputs`/`outputs` name the (rank-4) inputs and
    outputs the pass presents in another layout, with the permutation from the source's."""
    before = build()
    feeds = feeds_for(before)
    want = converter.run(before, feeds)
    after = build()
    result = layout_pass(after, layout, io)
    for name, perm in (inputs or {}).items():
        feeds[name] = np.ascontiguousarray(feeds[name].transpose(perm))
    for name, perm in (outputs or {}).items():
        want[name] = np.ascontiguousarray(want[name].transpose(perm))
    same_values(converter.run(after, feeds), want)
    return after, result


def types(graph) -> list[str]:
    return [op.op_type for op in graph.operations]


def only(graph, op_type):
    [op] = [op for op in graph.operations if op.op_type == op_type]
    return op


def conv(b, x, cin, cout, layout, k=1, seed=0, **options):
    """A conv2d in `layout`, its filter in the layout a model of that layout would use."""
    if layout == "nchw":
        w = b.constant(seeded((cout, cin, k, k), seed))
        return b.conv2d(x, w, **options)
    w = b.constant(seeded((k, k, cin, cout), seed))
    return b.conv2d(x, w, inputLayout="nhwc", filterLayout="hwio", **options)


def cnn(layout: str, features: bool = False):
    """A small CNN in `layout`: conv/relu/pool, a residual add, a concat and a softmax on the
    channel axis, a global pool and a reshape -> gemm head. Height 9, width 7: nothing
    symmetric to hide a swapped axis."""
    ch = 1 if layout == "nchw" else 3
    b = GraphBuilder(f"cnn_{layout}")
    x = b.input("x", "float32", [1, 3, 9, 7] if layout == "nchw" else [1, 9, 7, 3])
    c1 = conv(b, x, 3, 8, layout, k=3, seed=1, padding=[1, 1, 1, 1],
              bias=b.constant(seeded(8, 2)))
    r1 = b.relu(c1)
    p1 = b.maxPool2d(r1, windowDimensions=[2, 2], strides=[2, 2], layout=layout)
    c2 = conv(b, p1, 8, 8, layout, k=3, seed=3, padding=[1, 1, 1, 1])
    a = b.add(c2, p1)
    c3 = conv(b, a, 8, 4, layout, seed=4)
    cat = b.concat([a, c3], ch)
    sm = b.softmax(cat, ch)
    g = b.averagePool2d(sm, layout=layout)
    flat = b.reshape(g, [1, 12])
    y = b.gemm(flat, b.constant(seeded((12, 5), 5)), c=b.constant(seeded(5, 6)))
    outputs = {"y": y, "features": r1} if features else {"y": y}
    return b.build(outputs)


def channel_shuffle():
    """conv, then a channel shuffle (reshape to groups, swap groups and channels, reshape back)
    between two nchw convolutions."""
    from converter.ops.builder import GraphBuilder

    b = GraphBuilder("shuffle")
    x = b.input("x", "float32", [1, 6, 5, 3])
    c = conv(b, x, 6, 6, "nchw", seed=1)
    r = b.reshape(c, [1, 2, 3, 5, 3])  # [n, groups, channels per group, h, w]
    s = b.reshape(b.transpose(r, permutation=[0, 2, 1, 3, 4]), [1, 6, 5, 3])
    return b.build({"y": conv(b, s, 6, 4, "nchw", seed=2)})


def assert_in_layout(graph, layout: str) -> None:
    filters = {"nchw": "oihw", "nhwc": "ohwi"}[layout]
    for op in graph.operations:
        if op.op_type == "conv2d":
            assert (op.attr("inputLayout"), op.attr("filterLayout")) == (layout, filters)
            assert op.inputs[1].is_constant  # re-laid out now, not by a transpose op
        if op.op_type in ("maxPool2d", "averagePool2d"):
            assert op.attr("layout") == layout
