"""integer_weights (`convert --weights int8|int4`): conv2d, convTranspose2d, matmul and gemm
weights stored as int8 per output channel, or matmul and gemm weights as int4 in blocks along
the reduction dim, each read through dequantizeLinear.

Swept over every op kind, filter layout and operand slot, both types and every output format:
the weights the written file computes equal numpy's own quantize-dequantize of the float
weights exactly (scale = max|w| / 127 or / 7 in float32, q = roundEven(w / scale)), and the
op's result stays within a stated error of the float graph on ONNX Runtime."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import converter
from converter.errors import ConverterError
from converter.lowering.onnx.executor import run_on_ort
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes

RNG_SEED = 11
ROOT_TARGETS = Path(__file__).parents[2] / "converter" / "targets" / "data"


def reference(w: np.ndarray, weights: str, output_axis: int, reduction_axis: int,
              block: int = 32) -> np.ndarray:
    """numpy's symmetric quantize-dequantize of `w` (float32 throughout)."""
    if weights == "int8":
        others = tuple(a for a in range(w.ndim) if a != output_axis)
        scale = np.abs(w).max(axis=others, keepdims=True) / np.float32(127)
        scale[scale == 0] = 1
        return (np.clip(np.rint(w / scale), -127, 127) * scale).astype(np.float32)
    moved = np.moveaxis(w, reduction_axis, -1)
    blocks = moved.reshape(*moved.shape[:-1], moved.shape[-1] // block, block)
    scale = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(7)
    scale[scale == 0] = 1
    values = (np.clip(np.rint(blocks / scale), -8, 7) * scale).astype(np.float32)
    return np.moveaxis(values.reshape(moved.shape), -1, reduction_axis)


# (case, weights types, input shape, weight shape, output axis, reduction axis, build)
def _conv(layout, filter_layout):
    return lambda b, x, w: b.conv2d(x, w, inputLayout=layout, filterLayout=filter_layout)


def _conv_t(layout, filter_layout):
    return lambda b, x, w: b.convTranspose2d(x, w, inputLayout=layout, filterLayout=filter_layout)


CASES = [
    ("conv2d oihw", ("int8",), [1, 6, 7, 7], [16, 6, 3, 3], 0, 1, _conv("nchw", "oihw")),
    ("conv2d hwio", ("int8",), [1, 7, 7, 6], [3, 3, 6, 16], 3, 2, _conv("nhwc", "hwio")),
    ("conv2d ohwi", ("int8",), [1, 7, 7, 6], [16, 3, 3, 6], 0, 3, _conv("nhwc", "ohwi")),
    ("conv2d ihwo", ("int8",), [1, 7, 7, 6], [6, 3, 3, 16], 3, 0, _conv("nhwc", "ihwo")),
    ("convTranspose2d iohw", ("int8",), [1, 6, 5, 5], [6, 16, 3, 3], 1, 0,
     _conv_t("nchw", "iohw")),
    ("convTranspose2d hwoi", ("int8",), [1, 5, 5, 6], [3, 3, 16, 6], 2, 3,
     _conv_t("nhwc", "hwoi")),
    ("convTranspose2d ohwi", ("int8",), [1, 5, 5, 6], [16, 3, 3, 6], 0, 3,
     _conv_t("nhwc", "ohwi")),
    ("matmul b", ("int8", "int4"), [3, 64], [64, 24], 1, 0, lambda b, x, w: b.matmul(x, w)),
    ("matmul batched b", ("int8", "int4"), [2, 3, 64], [2, 64, 8], 2, 1,
     lambda b, x, w: b.matmul(x, w)),
    ("matmul a", ("int8", "int4"), [64, 5], [24, 64], 0, 1, lambda b, x, w: b.matmul(w, x)),
    ("gemm b", ("int8", "int4"), [3, 64], [64, 24], 1, 0, lambda b, x, w: b.gemm(x, w)),
    ("gemm transposed b", ("int8", "int4"), [3, 64], [24, 64], 0, 1,
     lambda b, x, w: b.gemm(x, w, bTranspose=True)),
    ("gemm transposed a", ("int8", "int4"), [64, 3], [64, 24], 1, 0,
     lambda b, x, w: b.gemm(w, x, aTranspose=True)),
]
SWEEP = [pytest.param(case, weights, id=f"{case[0]}-{weights}")
         for case in CASES for weights in case[1]]
FORMATS = (".webnn", ".json", ".onnx", ".tflite")


def _graph(case, seed=RNG_SEED):
    _, _, x_shape, w_shape, _, _, build = case
    rng = np.random.default_rng(seed)
    b = GraphBuilder("g")
    x = b.input("x", "float32", x_shape)
    w_value = rng.standard_normal(w_shape).astype(np.float32)
    w_value[(0,) * w_value.ndim] = 0  # a zero stays zero
    y = build(b, x, b.constant(w_value, name="w"))
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    return b.build({"y": y}), w_value, feeds


def _quantized(case, weights):
    """The case's graph after the pass, with the weights it computes as an output `w_out`."""
    graph, w_value, feeds = _graph(case)
    want = run_on_ort(graph, feeds)["y"]
    [(_, result)] = run_passes(graph, ["integer_weights"], PassContext(weights=weights))
    stored = w_value.size // (1 if weights == "int8" else 2)
    scales = (w_value.shape[case[4]] if weights == "int8" else w_value.size // 32) * 4
    assert result.counts == {"quantized": 1, "kept float32": 0, "bytes_before": w_value.nbytes,
                             "bytes_after": stored + scales}, result.notes
    dq = graph.operand("w").producer
    assert dq.op_type == "dequantizeLinear"
    q, scale, zero = dq.inputs
    assert (q.data_type, scale.data_type, zero.data_type) == (weights, "float32", weights)
    assert zero.constant.fill == 0
    _, _, _, w_shape, out_axis, red_axis, _ = case
    if weights == "int8":  # one scale per output channel
        assert scale.shape == tuple(d if a == out_axis else 1 for a, d in enumerate(w_shape))
    else:  # one a block of 32 along the reduction dim, for each output channel
        assert scale.shape == tuple(d // 32 if a == red_axis else d
                                    for a, d in enumerate(w_shape))
    assert q.constant.nbytes == w_value.size // (1 if weights == "int8" else 2)
    out = graph.add_operation("identity", [graph.operand("w")], name="w_identity")
    graph.set_output("w_out", out.output)
    return graph, w_value, feeds, want


def _run_written(graph, path, feeds):
    converter.save(graph, path)
    if path.suffix == ".onnx":
        import onnxruntime as ort

        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    if path.suffix == ".tflite":
        from converter.runtimes.litert import run_litert

        # LiteRT's XNNPACK delegate takes a DEQUANTIZE of a constant into its reader and
        # leaves the dequantized tensor unwritten when it is also a model output: the
        # weights are read on LiteRT's builtin kernels, the result on the default ones
        got = run_litert(path, feeds)
        got["w_out"] = run_litert(path, feeds, kernels="builtin")["w_out"]
        return got
    loaded = converter.load(path)
    assert [c.data_type for c in loaded.constants.values()
            if c.name.startswith("w_int")] == [graph.operand("w").producer.inputs[0].data_type]
    return converter.run(loaded, feeds)


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize("case, weights", SWEEP)
def test_written_weights_equal_numpy_quantize_dequantize(case, weights, suffix, tmp_path):
    if suffix == ".tflite" and weights == "int4":
        pytest.skip("refused for .tflite (tests/cli/test_weights_option.py)")
    graph, w_value, feeds, want = _quantized(case, weights)
    got = _run_written(graph, tmp_path / f"g{suffix}", feeds)
    _, _, _, _, out_axis, red_axis, _ = case
    np.testing.assert_array_equal(got["w_out"], reference(w_value, weights, out_axis, red_axis))
    # the op computes with those weights: within a stated error of the float graph
    bound = {"int8": 0.02, "int4": 0.15}[weights]
    err = np.abs(got["y"] - want).max()
    assert err <= bound * np.abs(want).max(), (err, np.abs(want).max())
    cosine = float(got["y"].ravel() @ want.ravel()
                   / (np.linalg.norm(got["y"]) * np.linalg.norm(want)))
    assert cosine >= {"int8": 0.9995, "int4": 0.99}[weights], cosine


def test_int4_block_size_is_an_option():
    """Blocks of 16 along K = 64: four scales per output channel, values as numpy's."""
    case = CASES[7]  # matmul b [64, 24]
    graph, w_value, _ = _graph(case)
    run_passes(graph, ["integer_weights"], PassContext(weights="int4", block_size=16))
    q, scale, _ = graph.operand("w").producer.inputs
    assert scale.shape == (4, 24)
    got = q.constant.numpy().astype(np.float32) * np.repeat(scale.constant.numpy(), 16, axis=0)
    np.testing.assert_array_equal(got, reference(w_value, "int4", 1, 0, block=16))


def test_the_default_block_size_leaves_a_dim_it_does_not_divide_float32():
    """K = 72 and the default block size (32): that weight stays float32, listed; K = 64 beside
    it is quantized."""
    rng = np.random.default_rng(1)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 72])
    odd = b.constant(rng.standard_normal((72, 64)).astype(np.float32), name="odd")
    even = b.constant(rng.standard_normal((64, 8)).astype(np.float32), name="even")
    graph = b.build({"y": b.matmul(b.matmul(x, odd), even)})
    [(_, result)] = run_passes(graph, ["integer_weights"], PassContext(weights="int4"))
    assert result.notes[1:] == ["kept float32 (reduction dim not a multiple of 32): odd"]
    assert graph.operand("odd").is_constant and not graph.operand("even").is_constant


@pytest.mark.parametrize("block", [48, 128])
def test_a_block_size_that_does_not_divide_is_refused(block):
    """K = 64: 48 does not divide it (refused, naming the weight, nothing changed); 128 is
    longer than the dim, so the weight has too few values per block and stays float32."""
    graph, _, _ = _graph(CASES[7])
    if block == 48:
        with pytest.raises(ConverterError, match=r"block size 48 does not divide the reduction "
                                                 r"dim \(64\) of 'w'"):
            run_passes(graph, ["integer_weights"], PassContext(weights="int4", block_size=48))
        assert graph.operand("w").is_constant
        return
    [(_, result)] = run_passes(graph, ["integer_weights"],
                               PassContext(weights="int4", block_size=128))
    assert not result.changed
    assert result.notes == ["kept float32 (fewer than 128 values per block): w"]


def _mixed_graph():
    rng = np.random.default_rng(0)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [1, 8, 6, 6])
    f = b.constant(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), name="filter")
    bias = b.constant(rng.standard_normal(16).astype(np.float32), name="bias")
    flat = b.reshape(b.conv2d(x, f, bias=bias), [1, 256])
    fc = b.constant(rng.standard_normal((256, 64)).astype(np.float32), name="fc")
    norm = b.constant(rng.random(64).astype(np.float32) + 0.5, name="norm_scale")
    z = b.mul(b.matmul(flat, fc), norm)
    shared = b.constant(rng.standard_normal((64, 64)).astype(np.float32), name="shared")
    z = b.add(b.matmul(z, shared), b.slice(shared, [0, 0], [1, 64]))
    small = b.constant(rng.standard_normal((8, 4)).astype(np.float32), name="small")
    return b.build({"out": b.matmul(b.reshape(z, [8, 8]), small)})


@pytest.mark.parametrize("weights, quantized, kept", [
    ("int8", ["filter", "fc"],
     ["kept float32 (under 256 bytes): bias, small",
      "kept float32 (not a weight of conv2d, convTranspose2d, matmul, gemm): norm_scale",
      "kept float32 (also read as other than a weight): shared"]),
    ("int4", ["fc"],
     ["kept float32 (under 256 bytes): bias, small",
      "kept float32 (convolution filters: int4 takes matmul and gemm weights): filter",
      "kept float32 (not a weight of matmul, gemm): norm_scale",
      "kept float32 (also read as other than a weight): shared"])])
def test_what_stays_float32_is_listed(weights, quantized, kept):
    """Biases and small constants, a normalization's scale, a weight also read otherwise,
    and under int4 a convolution filter: each listed with its reason; the rest is quantized."""
    graph = _mixed_graph()
    [(_, result)] = run_passes(graph, ["integer_weights"], PassContext(weights=weights))
    assert sorted(n for n in ("filter", "fc", "shared", "norm_scale", "bias", "small")
                  if not graph.operand(n).is_constant) == sorted(quantized)
    assert result.notes[0].startswith(f"{len(quantized)} weight")
    assert sorted(result.notes[1:]) == sorted(kept)


def test_non_finite_weights_graph_outputs_and_constant_slots_stay_float32(tmp_path):
    """A weight holding NaN or infinity (no scale holds it) and a weight read where the target
    wants a constant (a target file asking matmul's b constant: a dequantizeLinear result is
    computed) stay float32, each listed."""
    import json

    from converter.targets import load_target

    rng = np.random.default_rng(2)
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 64])
    values = {n: rng.standard_normal((64, 64)).astype(np.float32) for n in ("nan", "inf")}
    values["nan"][3, 4], values["inf"][5, 6] = np.nan, -np.inf
    consts = {n: b.constant(v, name=n) for n, v in values.items()}
    graph = b.build({"y": b.matmul(b.matmul(x, consts["nan"]), consts["inf"])})
    [(_, result)] = run_passes(graph, ["integer_weights"], PassContext(weights="int8"))
    assert not result.changed
    assert result.notes == ["kept float32 (values not finite): nan, inf"]
    doc = json.loads((ROOT_TARGETS / "portable.json").read_text())
    doc["webnn-converter"].update(name="b-constant", constantOperands={"matmul": ["b"]})
    (tmp_path / "t.json").write_text(json.dumps(doc))
    target = load_target(tmp_path / "t.json")
    graph, _, _ = _graph(CASES[7])
    [(_, result)] = run_passes(graph, ["integer_weights"],
                               PassContext(target=target, weights="int8"))
    assert result.notes == ["kept float32 (read where b-constant wants a constant): "
                            "w (matmul 'matmul' b)"]


@pytest.mark.parametrize("weights, block_size, says", [
    ("int8", 16, "a block size applies with int4 weights, not int8"),
    ("float32", 32, "a block size applies with int4 weights, not float32"),
    ("int4", 1, "block size 1 is not a whole number of 2 or more"),
    ("int4", 2.5, "block size 2.5 is not a whole number"),
    ("int4", True, "block size True is not a whole number"),
])
def test_converter_convert_refuses_block_sizes_before_reading(tmp_path, weights, block_size,
                                                              says):
    with pytest.raises(ConverterError, match=says):
        converter.convert(tmp_path / "absent.onnx", tmp_path / "out.webnn", weights=weights,
                          block_size=block_size)
    assert list(tmp_path.iterdir()) == []
