"""Every piece of advice `check` can print, proved: a graph that gets it, and the target
pipeline run on that graph. Advice naming a pass must see that pass change the graph and the
violation gone; advice naming none must begin "no pass" and see the violation stay."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import UnsupportedError
from converter.targets import Target, load_target
from converter.targets.advice import ADVICE
from converter.targets.check import check
from converter.targets.pipeline import convert_for_target


def _spec(edit=None, **extra) -> Target:
    spec = load_target("spec")
    limits = copy.deepcopy(spec.limits)
    if edit:
        edit(limits)
    return Target(name="custom", limits=limits, **extra)


def _ones(b, *shape):
    return b.constant(np.ones(shape, np.float32))


def _decompose():
    b = GraphBuilder("g")
    g = b.build({"y": b.gelu(b.input("x", "float32", [2, 3]), name="act")})
    return g, _spec(lambda d: d.pop("gelu")), "act"


def _no_decomposition():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 3, 4])
    g = b.build({"y": b.gatherND(x, b.constant(np.array([[1, 0]], np.int32)), name="g_nd")})
    return g, _spec(lambda d: d.pop("gatherND")), "g_nd"


def _int64():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [4, 5])
    g = b.build({"y": b.gather(x, b.constant(np.array([3, 0], np.int64)), axis=0, name="gat")})
    return g, load_target("coreml"), "gat"


def _no_type_change():
    b = GraphBuilder("g")
    a = b.input("a", "float32", [2])
    g = b.build({"y": b.cast(b.cast(a, "uint64", name="wide"), "float32", name="back")})
    return g, load_target("coreml"), "wide"


def _int8_in_float():
    # chromium-litert takes pad and maxPool2d in float32 and uint8, not int8 (a statically
    # quantized TFLite model pads and pools int8 values)
    b = GraphBuilder("g")
    x = b.input("x", "int8", [1, 2, 4, 4])
    padded = b.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], name="pad")
    g = b.build({"y": b.maxPool2d(padded, windowDimensions=[2, 2], strides=[2, 2],
                                  name="pool")})
    return g, load_target("chromium-litert"), "pool"


def _interface_rank():
    b = GraphBuilder("g")
    g = b.build({"y": b.relu(b.input("x6", "float32", [1, 2, 3, 2, 2, 2]), name="act")})
    return g, load_target("coreml"), None


def _constant_rank():
    # A rank-6 constant broadcast against a rank-5 input, summed back to rank 5: add and
    # reduceSum run at rank 5, and the constant is stored at rank 5.
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    c = b.constant(np.arange(2, dtype=np.float32).reshape(2, 1, 1, 1, 1, 1), name="c6")
    g = b.build({"y": b.reduceSum(b.add(x, c, name="sum"), axes=[0], name="total")})
    return g, load_target("coreml"), None


def _alternating(b, x, c):
    """add(x, c) where x and c broadcast in alternate dimensions: no two neighbours merge, so
    the add cannot leave rank 6; reduceSum brings the result back to rank 5."""
    return b.reduceSum(b.add(x, c, name="alternate"), axes=[0], name="total")


def _constant_rank_stays():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    six = b.reshape(x, [2, 1, 12, 1, 30, 1], name="to6")
    c = b.constant(np.ones((1, 5, 1, 6, 1, 7), np.float32), name="c6")
    return b.build({"y": _alternating(b, six, c)}), load_target("coreml"), None


def _op_rank():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 3, 4, 5, 6])
    g = b.build({"y": b.reduceMax(b.reshape(x, [2, 3, 4, 5, 3, 2], name="split6"), axes=[5],
                                  name="peak")})
    return g, load_target("coreml"), "peak"


def _reshape_merges():
    graph, target, _ = _op_rank()
    return graph, target, "split6"


def _op_rank_stays():
    graph, target, _ = _constant_rank_stays()
    return graph, target, "alternate"


def _batch_norm(b, x, mean, name="bn"):
    return b.batchNormalization(x, mean, _ones(b, 3), scale=_ones(b, 3), bias=_ones(b, 3),
                                name=name)


def _fold():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    mean = b.add(_ones(b, 3), _ones(b, 3), name="mean")
    return b.build({"y": _batch_norm(b, x, mean)}), load_target("coreml"), "bn"


def _rewrite():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    mean = b.reduceMean(x, axes=[0, 2, 3], name="mean")
    return b.build({"y": _batch_norm(b, x, mean)}), load_target("coreml"), "bn"


def _stays_computed():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    w = b.input("w", "float32", [2, 3, 1, 1])
    g = b.build({"y": b.conv2d(x, w, name="conv")})
    return g, _spec(constant_operands={"conv2d": ["filter"]}), "conv"


def _too_big():
    b = GraphBuilder("g")
    g = b.build({"y": b.relu(b.input("x", "float32", [2**29]), name="act")})
    return g, load_target("coreml"), None


def _quantized_weights():
    # uint4 MatMulNBits weights (more than fold_constants folds): chromium-litert's
    # dequantizeLinear takes int4, so the pass re-bases them.
    from converter.importers.onnx import import_model
    from tests.passes.quantized_models import decoder_block

    model, _ = decoder_block()
    return import_model(model), load_target("chromium-litert"), "up/dequantizeLinear"


def _dequantize_weights():
    # The same weights on a target without dequantizeLinear: computed at conversion time.
    graph, _, node = _quantized_weights()
    return graph, _spec(lambda d: d.pop("dequantizeLinear")), node


def _int_clamp():
    # chromium-litert's clamp takes floats only; its max and min take int32
    b = GraphBuilder("g")
    g = b.build({"y": b.clamp(b.input("x", "int32", [2, 3]), minValue=0, maxValue=5,
                              name="clip")})
    return g, load_target("chromium-litert"), "clip"


def _pad_as_gathers():
    # chromium-litert's build() refuses pad's edge mode
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    g = b.build({"y": b.pad(x, [0, 0, 2, 1], [0, 0, 0, 3], mode="edge", name="pad")})
    return g, load_target("chromium-litert"), "pad"


def _option_stays():
    # the same pad on a target whose gather takes no float32: no rewrite fits
    def no_float_gather(limits):
        for name in ("input", "output"):
            limits["gather"][name]["dataTypes"].remove("float32")
    graph, _, node = _pad_as_gathers()
    return graph, _spec(no_float_gather, refused_options={"pad": {"mode": ["edge"]}}), node


def _split_constant():
    # a constant of 1 KiB on a target that takes at most 256 bytes a constant
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 16])
    w = b.constant(np.arange(256, dtype=np.float32).reshape(16, 16), name="w")
    g = b.build({"y": b.matmul(x, w, name="mm")})
    return g, _spec(max_constant_bytes=256), None


CASES = {
    "int-clamp": _int_clamp,
    "pad-as-gathers": _pad_as_gathers,
    "option-stays": _option_stays,
    "split-constant": _split_constant,
    "dequantize-weights": _dequantize_weights,
    "decompose": _decompose,
    "no-decomposition": _no_decomposition,
    "int64-to-int32": _int64,
    "quantized-weights": _quantized_weights,
    "no-type-change": _no_type_change,
    "int8-in-float": _int8_in_float,
    "interface-rank": _interface_rank,
    "constant-rank": _constant_rank,
    "constant-rank-stays": _constant_rank_stays,
    "op-rank": _op_rank,
    "reshape-merges": _reshape_merges,
    "op-rank-stays": _op_rank_stays,
    "fold": _fold,
    "rewrite": _rewrite,
    "stays-computed": _stays_computed,
    "too-big": _too_big,
}


def test_every_piece_of_advice_has_a_case():
    assert sorted(CASES) == sorted(a.key for a in ADVICE)


def _matching(violations, key, node):
    return [v for v in violations if v.advice == key and (node is None or v.node == node)]


@pytest.mark.parametrize("entry", ADVICE, ids=lambda a: a.key)
def test_advice_is_what_the_named_pass_does(entry):
    graph, target, node = CASES[entry.key]()
    found = _matching(check(graph, target), entry.key, node)
    assert found, f"the case does not trigger '{entry.key}'"
    assert {v.kind for v in found} == {entry.kind}

    if entry.fixed_by:
        assert all(any(f"'{name}' pass" in v.fix for name in entry.fixed_by) for v in found)
        report = convert_for_target(graph, target)  # raises if anything is left
        assert report.passed
        changed = {name for name, result in report.passes if result.changed}
        assert changed & set(entry.fixed_by), (entry.key, changed)
    else:
        assert all(v.fix.startswith("no pass") for v in found), [v.fix for v in found]
        with pytest.raises(UnsupportedError) as caught:
            convert_for_target(graph, target)
        left = _matching(caught.value.violations, entry.key, node)
        assert [(v.kind, v.tensor) for v in left] == [(v.kind, v.tensor) for v in found]


def test_a_decomposition_needing_ops_the_target_also_lacks_is_not_advised():
    # gelu decomposes through erf: without erf either, the decompose pass leaves gelu, and
    # check says so instead of naming the pass.
    def lacks_gelu_and_erf(limits):
        limits.pop("gelu")
        limits.pop("erf")
    target = _spec(lacks_gelu_and_erf)
    b = GraphBuilder("g")
    g = b.build({"y": b.gelu(b.input("x", "float32", [2, 3]), name="act")})

    [v] = check(g, target)

    assert v.advice == "no-decomposition" and "erf" in v.fix
    assert v.fix.startswith("no pass rewrites gelu: ")
    with pytest.raises(UnsupportedError) as caught:
        convert_for_target(g, target)
    assert [w.advice for w in caught.value.violations] == ["no-decomposition"]


def test_int64_constants_beyond_int32_are_not_advised_to_the_data_types_pass():
    b = GraphBuilder("g")
    x = b.input("x", "int32", [2])
    big = b.constant(np.array([2**40, 1], np.int64), name="big")
    g = b.build({"y": b.add(b.cast(x, "int64"), big, name="sum")})

    found = [v for v in check(g, "coreml") if v.tensor == "big"]

    assert found and {v.advice for v in found} == {"no-type-change"}
    assert all("(its values do not fit int32)" in v.fix for v in found)
    with pytest.raises(UnsupportedError) as caught:
        convert_for_target(g, "coreml")
    assert any(v.tensor == "big" for v in caught.value.violations)
