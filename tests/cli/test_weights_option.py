"""`convert --weights float16`: the weights file about halves, -v lists what stays float32, and
an unknown type is refused with one error line naming the types, nothing written."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import converter
from cli.main import main

TINY = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_the_cli_and_the_pass_take_the_same_types():
    from cli.options import WEIGHT_TYPES
    from converter.passes.float16_weights import WEIGHT_TYPES as PASS_WEIGHT_TYPES

    from cli.options import DEFAULT_BLOCK_SIZE
    from converter.passes.weight_types import DEFAULT_BLOCK_SIZE as PASS_BLOCK_SIZE

    assert WEIGHT_TYPES == PASS_WEIGHT_TYPES == ("float32", "float16", "int8", "int4")
    assert DEFAULT_BLOCK_SIZE == PASS_BLOCK_SIZE == 32


@pytest.mark.parametrize("target", [None, "chromium-litert"])
def test_convert_weights_float16_halves_the_weights_file(tmp_path, target):
    with_target = ["--target", target] if target else []
    plain = _run("convert", TINY, "-o", tmp_path / "f32.webnn", *with_target)
    assert plain.exit_code == 0, plain.output
    r = _run("convert", TINY, "-o", tmp_path / "f16.webnn", "--weights", "float16", "-v",
             *with_target)
    assert r.exit_code == 0, r.output
    assert "float16_weights: 3 constants stored as float16: 3.4 KiB -> 1.7 KiB" in r.stderr
    assert "float16_weights: kept float32 (under 256 bytes): conv1_b, conv2_b, fc_b" in r.stderr
    sizes = {n: (tmp_path / f"{n}.weights").stat().st_size for n in ("f32", "f16")}
    assert sizes["f16"] <= 0.55 * sizes["f32"], sizes


@pytest.mark.parametrize("value", ["int2", "FLOAT16", "bfloat16", ""])
def test_unknown_weights_type_is_one_error_line(tmp_path, value):
    r = _run("convert", TINY, "-o", tmp_path / "out.webnn", "--weights", value)
    assert r.exit_code == 2 and "Traceback" not in r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "--weights" in errors[0], r.output
    assert '"float32", "float16", "int8", "int4"' in errors[0], errors[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("weights, dequantized", [("float16", 3), ("int8", 3)])
def test_a_tflite_output_keeps_float16_and_int8_weights(tmp_path, weights, dequantized):
    """TFLite's own forms: a float16 constant, or an int8 one with per-channel quantization,
    read by DEQUANTIZE (the float16 casts were folded into float32 constants before); LiteRT's
    results match ONNX Runtime on the float source (cosine >= 0.9999)."""
    import numpy as np
    import onnxruntime as ort

    from converter.runtimes.litert import run_litert
    from tests.exporters.tflite.helpers import operator_codes

    for name, extra in (("f32", []), ("small", ["--weights", weights])):
        r = _run("convert", TINY, "-o", tmp_path / f"{name}.tflite", *extra)
        assert r.exit_code == 0, r.output
    sizes = {n: (tmp_path / f"{n}.tflite").stat().st_size for n in ("f32", "small")}
    # float16 saves 1,744 bytes of tiny_cnn's weights, int8 2,512 (DEQUANTIZE's tensors and
    # TFLite's per-channel parameters cost some back)
    assert sizes["small"] <= sizes["f32"] - {"float16": 1000, "int8": 1500}[weights], sizes
    codes = operator_codes((tmp_path / "small.tflite").read_bytes())
    assert codes.count("DEQUANTIZE") == dequantized, codes  # two filters and the fc weights
    plain = operator_codes((tmp_path / "f32.tflite").read_bytes())
    assert "DEQUANTIZE" not in plain
    # the oihw filters are stored permuted to TFLite's ohwi: no TRANSPOSE at run time
    assert codes.count("TRANSPOSE") == plain.count("TRANSPOSE"), (codes, plain)
    # ... and each once: the dequantizeLinear's (or cast's) unpermuted DEQUANTIZE is dropped
    from ai_edge_litert import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf((tmp_path / "small.tflite").read_bytes(), 0)
    stored = [t for t in model.subgraphs[0].tensors
              if t.type == {"float16": fb.TensorType.FLOAT16, "int8": fb.TensorType.INT8}[weights]
              and model.buffers[t.buffer].data is not None]
    assert len(stored) == 3, [t.name for t in stored]
    session = ort.InferenceSession(str(TINY), providers=["CPUExecutionProvider"])
    feeds = {"image": np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)}
    want = session.run(None, feeds)[0].ravel()
    got = next(iter(run_litert(tmp_path / "small.tflite", feeds).values())).ravel()
    assert got @ want / (np.linalg.norm(got) * np.linalg.norm(want)) >= 0.9999



LLAMA = Path(__file__).parents[2] / "models" / "optimum-tiny" / "llama" / "decoder_model.onnx"
LLAMA_DIMS = ("--dim", "batch_size=1", "--dim", "sequence_length=4")


@pytest.mark.parametrize("target", [None, "chromium-litert", "coreml"])
def test_convert_weights_int4_lists_what_it_did(tmp_path, target):
    with_target = ["--target", target] if target else []
    r = _run("convert", LLAMA, *LLAMA_DIMS, "-o", tmp_path / "q.webnn", "--weights", "int4",
             "--block-size", "16", "-v", *with_target)
    assert r.exit_code == 0, r.output
    stored = "int8" if target == "coreml" else "int4"  # coreml's dequantizeLinear takes no int4
    assert (f"integer_weights: 15 weights stored as {stored}, blocks of 16 with float32 scales: "
            f"84.0 KiB -> ") in r.stderr, r.stderr
    assert "integer_weights: kept float32 (not a weight of matmul, gemm): " \
           "model.embed_tokens.weight" in r.stderr
    assert "integer_weights: kept float32 (fills): model.layers.0.input_layernorm.weight" \
        in r.stderr


@pytest.mark.parametrize("args, says", [
    (("--weights", "int4", "--block-size", "1"), "block size 1 is not a whole number of 2"),
    (("--weights", "int4", "--block-size", "0"), "block size 0 is not a whole number of 2"),
    (("--weights", "int4", "--block-size", "-32"), "block size -32 is not a whole number"),
    (("--weights", "int4", "--block-size", "24"),
     "block size 24 does not divide the reduction dim (32) of "),
    (("--weights", "int8", "--block-size", "32"), "a block size applies with int4 weights"),
    (("--block-size", "32",), "a block size applies with int4 weights, not float32"),
    (("--weights", "int4", "-o.tflite"), "int4 weights stay int4 in .webnn, .json, .js and .onnx"),
])
def test_block_sizes_and_outputs_refused_in_one_line(tmp_path, args, says):
    output = tmp_path / ("out.tflite" if "-o.tflite" in args else "out.webnn")
    args = [a for a in args if a != "-o.tflite"]
    r = _run("convert", LLAMA, *LLAMA_DIMS, "-o", output, *args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_tflite_sizes_of_the_light_squeezenet(tmp_path):
    """float16 halves the .tflite, int8 takes it to <= 0.27x."""
    from converter.testing.light_models import light_model

    source = light_model("squeezenet", tmp_path, seed=0)
    sizes = {}
    for weights in ("float32", "float16", "int8"):
        converter.convert(source, tmp_path / f"{weights}.tflite", weights=weights)
        sizes[weights] = (tmp_path / f"{weights}.tflite").stat().st_size
    assert sizes["float16"] <= 0.51 * sizes["float32"], sizes
    assert sizes["int8"] <= 0.27 * sizes["float32"], sizes
