"""Indexing ops: signatures, hand-computed output shapes, and one test per validation step.

Cases follow the spec's examples (index.bs, gather/gatherElements/gatherND/scatter sections),
with the shape arithmetic written out next to each.
"""
from __future__ import annotations


from converter.ops.builder import GraphBuilder
from converter.ops.registry import get_op

from .helpers import fails


def t(b: GraphBuilder, shape, data_type="float32"):
    return b.input(b.graph.fresh_name("t"), data_type, list(shape))


def idx(b: GraphBuilder, shape, data_type="int32"):
    return t(b, shape, data_type)


def test_signatures_match_the_spec():
    for name, operands, options in (
        ("gather", ("input", "indices"), [("axis", "uint", 0)]),
        ("gatherElements", ("input", "indices"), [("axis", "uint", 0)]),
        ("gatherND", ("input", "indices"), []),
        ("scatterElements", ("input", "indices", "updates"), [("axis", "uint", 0)]),
        ("scatterND", ("input", "indices", "updates"), []),
    ):
        d = get_op(name)
        assert d.operands == operands and d.operand_options == () and d.arguments == (), name
        assert [(p.name, p.kind, p.default) for p in d.options] == options, name


# -- gather ------------------------------------------------------------------------------------
def test_gather_shapes():
    b = GraphBuilder()
    x = t(b, [4, 3])
    # axis 0, indices [2]: [] + [2] + [3] = [2, 3]
    assert b.gather(x, idx(b, [2], "uint32")).shape == (2, 3)
    # axis 1, indices [3]: [4] + [3] + [] = [4, 3]
    assert b.gather(x, idx(b, [3]), axis=1).shape == (4, 3)
    # axis 1, indices [2,2]: [4] + [2, 2] + [] = [4, 2, 2]
    assert b.gather(x, idx(b, [2, 2], "int64"), axis=1).shape == (4, 2, 2)
    # axis 2 of [2,3,4], indices [5,6]: [2, 3] + [5, 6] + [] = [2, 3, 5, 6]
    assert b.gather(t(b, [2, 3, 4]), idx(b, [5, 6]), axis=2).shape == (2, 3, 5, 6)
    # axis 1 of [2,3,4], scalar index: [2] + [] + [4] = [2, 4]
    y = b.gather(t(b, [2, 3, 4], "int8"), idx(b, []), axis=1)
    assert y.desc == ("int8", (2, 4))


def test_gather_errors():
    b = GraphBuilder()
    x = t(b, [4, 3])
    fails(lambda: b.gather(x, idx(b, [2]), axis=2), "gather", "axis", "out of range for rank 2")
    fails(lambda: b.gather(x, idx(b, [2], "float32")), "gather", "indices",
          "float32 is not allowed")
    fails(lambda: b.gather(t(b, []), idx(b, [2])), "gather", "input", "rank 0 is not allowed")


# -- gatherElements ----------------------------------------------------------------------------
def test_gather_elements_shapes():
    b = GraphBuilder()
    x = t(b, [4, 3])
    # axis 0: indices [2,3] differs from input only in dim 0 -> output is indices' shape [2, 3]
    assert b.gatherElements(x, idx(b, [2, 3], "uint32")).shape == (2, 3)
    # axis 1: indices [4,1] -> [4, 1]
    assert b.gatherElements(x, idx(b, [4, 1]), axis=1).shape == (4, 1)
    # [4,2,2] with indices [1,2,2] on axis 0 -> [1, 2, 2], input's data type
    y = b.gatherElements(t(b, [4, 2, 2], "int32"), idx(b, [1, 2, 2], "int64"))
    assert y.desc == ("int32", (1, 2, 2))


def test_gather_elements_errors():
    b = GraphBuilder()
    x = t(b, [4, 3])
    # axis 0 lets dim 0 differ, but dim 1 is 2 where input has 3
    fails(lambda: b.gatherElements(x, idx(b, [2, 2])), "gatherElements", "indices",
          "except axis 0")
    fails(lambda: b.gatherElements(x, idx(b, [4])), "gatherElements", "indices",
          "rank 1 must match input's rank 2")
    fails(lambda: b.gatherElements(x, idx(b, [4, 3]), axis=2), "gatherElements", "axis",
          "out of range for rank 2")


# -- gatherND ----------------------------------------------------------------------------------
def test_gather_nd_shapes():
    b = GraphBuilder()
    x2, x3 = t(b, [2, 2]), t(b, [2, 2, 2])
    # k = indices.shape[-1]; output = indices.shape[:-1] + input.shape[k:]
    assert b.gatherND(x2, idx(b, [3, 2])).shape == (3,)        # [3] + []
    assert b.gatherND(x2, idx(b, [2, 1])).shape == (2, 2)      # [2] + [2]
    assert b.gatherND(x3, idx(b, [2, 2])).shape == (2, 2)      # [2] + [2]
    assert b.gatherND(x3, idx(b, [3, 1])).shape == (3, 2, 2)   # [3] + [2, 2]
    assert b.gatherND(x3, idx(b, [5, 3])).shape == (5,)        # [5] + []
    # one full coordinate picks one element: [] + [] = a scalar
    assert b.gatherND(x2, idx(b, [2])).shape == ()


def test_gather_nd_errors():
    b = GraphBuilder()
    x = t(b, [2, 2])
    fails(lambda: b.gatherND(x, idx(b, [3, 3])), "gatherND", "indices",
          "last dimension 3 (the coordinate length) exceeds input's rank 2")
    fails(lambda: b.gatherND(x, idx(b, [])), "gatherND", "indices", "rank 0 is not allowed")


# -- scatterElements ---------------------------------------------------------------------------
def test_scatter_elements_shapes():
    b = GraphBuilder()
    x = t(b, [4, 3])
    # the result is a copy of input's descriptor: [4, 3]
    assert b.scatterElements(x, idx(b, [2, 3]), t(b, [2, 3])).shape == (4, 3)
    assert b.scatterElements(x, idx(b, [4, 1]), t(b, [4, 1]), axis=1).shape == (4, 3)
    y = b.scatterElements(t(b, [4, 2, 2], "int32"), idx(b, [1, 2, 2]), t(b, [1, 2, 2], "int32"))
    assert y.desc == ("int32", (4, 2, 2))


def test_scatter_elements_errors():
    b = GraphBuilder()
    x = t(b, [4, 3])
    fails(lambda: b.scatterElements(x, idx(b, [2, 3]), t(b, [2, 2])), "scatterElements",
          "updates", "shape [2, 2] must be [2, 3]")
    fails(lambda: b.scatterElements(x, idx(b, [2, 2]), t(b, [2, 2])), "scatterElements",
          "indices", "except axis 0")
    fails(lambda: b.scatterElements(x, idx(b, [2, 3]), t(b, [2, 3], "int32")),
          "scatterElements", "updates", "must match input's float32")
    fails(lambda: b.scatterElements(x, idx(b, [2, 3]), t(b, [2, 3]), axis=2),
          "scatterElements", "axis", "out of range for rank 2")


# -- scatterND ---------------------------------------------------------------------------------
def test_scatter_nd_shapes():
    b = GraphBuilder()
    # updates = indices.shape[:-1] + input.shape[k:]; the result has input's shape
    assert b.scatterND(t(b, [8]), idx(b, [4, 1]), t(b, [4])).shape == (8,)         # [4] + []
    assert b.scatterND(t(b, [2, 2]), idx(b, [2, 2]), t(b, [2])).shape == (2, 2)    # [2] + []
    assert b.scatterND(t(b, [3, 2]), idx(b, [2, 1]), t(b, [2, 2])).shape == (3, 2)  # [2] + [2]
    y = b.scatterND(t(b, [2, 2, 2]), idx(b, [2, 2]), t(b, [2, 2]))                # [2] + [2]
    assert y.desc == ("float32", (2, 2, 2))
    # a single full coordinate updates one element: updates is a scalar ([] + [])
    assert b.scatterND(t(b, [2, 2]), idx(b, [2]), t(b, [])).shape == (2, 2)


def test_scatter_nd_errors():
    b = GraphBuilder()
    x = t(b, [8])
    # expected updates [4] + [] = [4]
    fails(lambda: b.scatterND(x, idx(b, [4, 1]), t(b, [4, 1])), "scatterND", "updates",
          "shape [4, 1] must be [4]")
    fails(lambda: b.scatterND(t(b, [2, 2]), idx(b, [1, 3]), t(b, [1])), "scatterND", "indices",
          "last dimension 3 (the coordinate length) exceeds input's rank 2")
    fails(lambda: b.scatterND(x, idx(b, [4, 1]), t(b, [4], "float16")), "scatterND", "updates",
          "must match input's float32")
