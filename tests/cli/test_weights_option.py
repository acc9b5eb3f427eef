"""`convert --weights float16`: the weights file about halves, -v lists what stays float32, and
an unknown type is refused with one error line naming the types, nothing written."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

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
    assert "'float32', 'float16', 'int8', 'int4'" in errors[0], errors[0]
    assert list(tmp_path.iterdir()) == []


def test_a_tflite_output_is_refused_in_one_line(tmp_path):
    """The TFLite exporter folds a cast of a constant into float32: a .tflite would hold float32
    weights (and more bytes), so the option is refused there rather than ignored."""
    r = _run("convert", TINY, "-o", tmp_path / "out.tflite", "--weights", "float16")
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and ".tflite" in lines[0], lines
    assert list(tmp_path.iterdir()) == []
