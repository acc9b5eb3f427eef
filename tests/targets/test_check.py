"""check(graph, target) reports every violation at once, each kind with the right fix."""
import json
from pathlib import Path

import numpy as np
from converter import GraphBuilder
from converter.targets import EXTENSION, load_target
from converter.targets.check import KINDS, check, check_all

DATA = Path(__file__).resolve().parents[2] / "converter" / "targets" / "data"


def _spec_without(tmp_path, edit):
    """The spec target, edited by `edit(doc)`, as a file."""
    doc = json.loads((DATA / "spec.json").read_text())
    doc.pop(EXTENSION)
    edit(doc)
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(doc))
    return load_target(path)


def _ones(b, *shape, name=None):
    return b.constant(np.ones(shape, np.float32), name=name)


def test_a_graph_that_fits_has_no_violations_anywhere():
    b = GraphBuilder("fits")
    x = b.input("x", "float32", [1, 3, 8, 8])
    y = b.conv2d(x, _ones(b, 4, 3, 3, 3, name="w"), padding=[1, 1, 1, 1],
                 bias=_ones(b, 4, name="bias"), name="conv")
    g = b.build({"y": b.gemm(b.reshape(b.relu(y), [1, 256]), _ones(b, 256, 2), name="fc")})
    assert check_all(g) == {name: [] for name in
                            ("chromium-litert", "coreml", "directml", "onnxruntime", "spec")}
    assert load_target("coreml").emulates("gemm")  # emulated is not a violation


def test_unsupported_op_names_the_decompose_pass(tmp_path):
    target = _spec_without(tmp_path, lambda d: d.pop("gelu"))
    b = GraphBuilder("g")
    g = b.build({"y": b.gelu(b.input("x", "float32", [2, 3]), name="act")})
    (v,) = check(g, target)
    assert (v.kind, v.op, v.node, v.operand, v.tensor) == ("unsupported-op", "gelu", "act",
                                                           None, None)
    assert v.found == "gelu is not supported" and v.rule == "custom has no gelu op"
    assert "'decompose' pass" in v.fix
    assert v.line() == ("custom: gelu 'act': gelu is not supported; custom has no gelu op; fix: "
                        "`convert --target custom` decomposes gelu into ops it has (the "
                        "'decompose' pass)")


def test_int64_operands_point_at_the_data_types_pass():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [4, 5])
    idx = b.input("idx", "int64", [3])
    g = b.build({"y": b.gather(x, idx, axis=0, name="gat")})
    found = check(g, "coreml")
    assert [(v.kind, v.op, v.operand, v.tensor, v.found) for v in found] == [
        ("data-type", None, "input", "idx", "data type int64"),
        ("data-type", "gather", "indices", "idx", "data type int64"),
    ]
    assert found[1].rule == "coreml takes int32"
    assert all(v.fix.startswith("the 'data_types' pass narrows int64 to int32") for v in found)
    assert check(g, "onnxruntime") == []  # ORT takes int64 indices


def test_a_type_no_pass_converts_says_so():
    b = GraphBuilder("g")
    a = b.input("a", "uint64", [2])
    g = b.build({"y": b.add(a, a, name="sum")})
    found = check(g, "coreml")
    # graph input and output, then add's a and b (one tensor in two slots) and its result
    assert [(v.op, v.operand) for v in found] == [(None, "input"), (None, "output"), ("add", "a"),
                                                  ("add", "b"), ("add", "output")]
    assert found[2].fix == ("no pass converts uint64 here: the source model must compute in "
                            "one of float32, float16, int32")


def test_ranks_beyond_the_target_and_their_fixes():
    b = GraphBuilder("g")
    x6 = b.input("x6", "float32", [1, 2, 3, 2, 2, 2])
    y = b.relu(x6, name="act")
    bn = b.batchNormalization(b.reshape(y, [1, 2, 3, 2, 2, 2], name="r"), _ones(b, 2, name="m"),
                              _ones(b, 2, name="v"), scale=_ones(b, 2, name="s"),
                              bias=_ones(b, 2, name="bb"), name="bn")
    g = b.build({"y": bn})
    found = check(g, "coreml")
    rank = [v for v in found if v.kind == "rank"]
    assert [(v.op, v.operand, v.found, v.rule) for v in rank] == [
        (None, "input", "rank 6", "coreml takes ranks 0 to 5"),
        (None, "output", "rank 6", "coreml takes ranks 0 to 5"),
        ("relu", "input", "rank 6", "coreml takes ranks 0 to 5"),
        ("relu", "output", "rank 6", "coreml takes ranks 0 to 5"),
        ("reshape", "input", "rank 6", "coreml takes ranks 0 to 5"),
        ("reshape", "output", "rank 6", "coreml takes ranks 0 to 5"),
        ("batchNormalization", "input", "rank 6", "coreml takes ranks 3 to 5"),
        ("batchNormalization", "output", "rank 6", "coreml takes ranks 3 to 5"),
    ]
    assert rank[0].fix.startswith("no pass changes a graph input's or output's shape")
    assert rank[1].fix == rank[0].fix
    assert rank[2].fix == "the 'rank' pass runs relu at rank 5 between reshapes"
    # relu and batchNormalization are rewritten around it: the reshape merges with theirs.
    assert rank[4].fix.startswith("the 'rank' pass rewrites the ops on its out-of-range side")
    assert rank[6].fix == "the 'rank' pass runs batchNormalization at rank 5 between reshapes"
    assert [v.advice for v in rank] == ["interface-rank"] * 2 + ["op-rank"] * 2 + \
        ["reshape-merges"] * 2 + ["op-rank"] * 2
    assert check(g, "directml") == []  # DirectML goes to rank 8


def test_a_scalar_where_the_target_takes_none(tmp_path):
    def no_scalar_relu(doc):
        doc["relu"]["input"]["rankRange"]["min"] = 1
    target = _spec_without(tmp_path, no_scalar_relu)
    b = GraphBuilder("g")
    g = b.build({"y": b.relu(b.input("s", "float32", []), name="act")})
    (v,) = check(g, target)
    assert (v.kind, v.op, v.operand, v.found, v.rule) == ("rank", "relu", "input", "rank 0",
                                                          "custom takes ranks 1 to 5")
    assert v.fix == "the 'rank' pass runs relu at rank 1 between reshapes"


def test_tensors_over_the_byte_limit():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2**29])  # 2 GiB: one byte over CoreML's INT32_MAX
    g = b.build({"y": b.relu(x, name="act")})
    found = check(g, "coreml")
    assert [(v.kind, v.op, v.operand, v.tensor, v.found) for v in found] == [
        ("tensor-size", None, "input", "x", "2147483648 bytes"),
        ("tensor-size", "relu", "output", "act", "2147483648 bytes"),
    ]
    assert found[0].rule == "coreml takes at most 2147483647 bytes a tensor"
    assert "no pass splits a tensor" in found[0].fix
    assert check(g, "directml") == []  # UINT32_MAX bytes


def _batch_norm(b, x, mean):
    return b.batchNormalization(x, mean, _ones(b, 3, name="var"), scale=_ones(b, 3, name="sc"),
                                bias=_ones(b, 3, name="bi"), name="bn")


def test_constant_operands_computed_from_inputs_need_the_constant_operands_pass():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    mean = b.reduceMean(x, axes=[0, 2, 3], name="mean")
    g = b.build({"y": _batch_norm(b, x, mean)})
    (v,) = check(g, "coreml")
    assert (v.kind, v.op, v.node, v.operand, v.tensor) == ("not-constant", "batchNormalization",
                                                           "bn", "mean", "mean")
    assert v.found == "computed by reduceMean 'mean'"
    assert v.rule == "coreml needs batchNormalization mean to be a graph constant"
    assert v.fix == ("the 'constant_operands' pass rewrites batchNormalization: it decomposes "
                     "it into ops that need no constant operands")
    assert check(g, "chromium-litert") == []


def test_constant_operands_computed_from_constants_need_folding_only():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    mean = b.add(_ones(b, 3, name="m1"), _ones(b, 3, name="m2"), name="mean")
    g = b.build({"y": _batch_norm(b, x, mean)})
    (v,) = check(g, "coreml")
    assert v.kind == "not-constant" and v.found == "computed by add 'mean'"
    assert v.fix.startswith("it depends on constants only: the 'fold_constants' pass computes")


def test_recurrent_weights_given_as_graph_inputs():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 1, 4])
    w = b.input("w", "float32", [1, 12, 4])
    r = b.constant(np.zeros((1, 12, 3), np.float32), name="r")
    bias = b.input("bias", "float32", [1, 12])
    outs = b.lstm(x, w, r, 2, 3, bias=bias, name="lstm")
    g = b.build({"h": outs[0]})
    found = check(g, "coreml")
    assert [(v.kind, v.operand, v.tensor, v.found) for v in found] == [
        ("not-constant", "weight", "w", "a graph input"),
        ("not-constant", "bias", "bias", "a graph input"),
    ]


def test_every_kind_at_once_in_the_order_of_the_rules(tmp_path):
    def edit(doc):
        doc.pop("softplus")
        doc[EXTENSION] = {"name": "custom", "constantOperands": {"batchNormalization": ["mean"]},
                          "refusedOptions": {"pad": {"mode": ["edge"]}}}
    target = _spec_without(tmp_path, edit)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 3, 4, 4])
    idx = b.input("idx", "int64", [1])
    y = _batch_norm(b, x, b.reduceMean(x, axes=[0, 2, 3], name="mean"))
    big = b.input("big", "float32", [2**29])
    g = b.build({"y": b.gather(y, idx, axis=1, name="gat"), "big": b.relu(big, name="act"),
                 "z": b.softplus(x, name="soft"), "r": b.reshape(x, [1, 1, 1, 3, 4, 4], name="r"),
                 "p": b.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], mode="edge", name="edgy")})
    found = check(g, target)
    # graph inputs/constants/outputs, then operations in graph order, then tensor sizes
    assert [(v.kind, v.op, v.operand, v.tensor or v.node) for v in found] == [
        ("data-type", None, "input", "idx"),
        ("rank", None, "output", "r"),
        ("not-constant", "batchNormalization", "mean", "mean"),
        ("data-type", "gather", "indices", "idx"),
        ("unsupported-op", "softplus", None, "soft"),
        ("rank", "reshape", "output", "r"),
        ("option", "pad", None, "edgy"),
        ("tensor-size", None, "input", "big"),
        ("tensor-size", "relu", "output", "act"),
    ]
    assert {v.kind for v in found} == set(KINDS)
    assert all(v.target == "custom" for v in found)
    assert [v.to_json()["kind"] for v in found] == [v.kind for v in found]
