"""The fuzz corpus's cases for serve's certificate files, compressed weights and hostile numbers
(tools/fuzz_tls.py, tools/fuzz_weights.py, tools/fuzz_numbers.py): their judges see what they
are there to see, and the numbers generator makes only numbers that must be refused. The CI
sample (test_fuzz_sample.py) runs every case; these show each judge fails what it must."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import fuzz_numbers  # noqa: E402
import fuzz_tls  # noqa: E402
import fuzz_weights  # noqa: E402
from converter.devices import tls  # noqa: E402

MAX = np.finfo(np.float32).max


def _out(tmp_path: Path, stderr: str, cache: list[str] = ()) -> Path:
    tmp_path.mkdir()
    (tmp_path / "stdout.txt").write_text("")
    (tmp_path / "stderr.txt").write_text(stderr)
    for name in cache:
        (tmp_path / "cache" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cache" / name).write_text("{}")
    return tmp_path


def test_the_pair_the_tls_cases_damage_is_one_serve_takes(tmp_path):
    """Each tls-* case is refused for its damage, not because the pair was bad to begin with."""
    fuzz_tls.tls_pair("valid")(tmp_path, tmp_path)
    pair = tls.given(tmp_path / "cert.pem", tmp_path / "key.pem")
    assert pair.names == ("127.0.0.1", "localhost")


def test_serve_refusals_are_judged(tmp_path):
    one = "error: cert.pem: not a PEM certificate; give the certificate file\n"
    assert fuzz_tls._refused(_out(tmp_path / "a", one), 2) is None
    assert fuzz_tls._refused(_out(tmp_path / "b", one), 0) == "exit 0, not 2"
    assert fuzz_tls._refused(_out(tmp_path / "c", one * 2), 2) == "2 error lines, not 1"
    assert fuzz_tls._refused(_out(tmp_path / "d", one, ["devices/server.json"]), 2) == \
        "left ['devices/server.json'] in the cache"
    assert fuzz_tls._refused(_out(tmp_path / "e", one, ["devices/tls/serve-key.pem"]), 2) == \
        "left ['devices/tls'] in the cache"


def test_a_serve_that_listens_is_killed_and_fails(tmp_path):
    """The valid pair as a case of its own, with a 3 s timeout: serve listens, the fuzzer kills
    it and counts a timeout (and the run exits 1)."""
    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/tools']\n"
        "import dataclasses, fuzz, fuzz_corpus, fuzz_tls\n"
        "make = fuzz_tls.tls_pair('valid')\n"
        "fuzz_corpus.HOSTILE[:] = [('tls-valid', lambda f, r: dataclasses.replace(make(f, r), "
        "timeout=3.0))]\n"
        "sys.exit(fuzz.main(['--count', '1', '--jobs', '1', '--out', sys.argv[2]]))\n")
    proc = subprocess.run([sys.executable, "-c", script, str(ROOT), str(tmp_path / "f")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # killed, it leaves its temporary folder too (a leftover): the timeout is the point
    assert re.search(r"^FAIL timeout\S*: 0000-tls-valid serve", proc.stdout, re.M), proc.stdout


def _matmul(path: Path, w: np.ndarray | None = None, q: np.ndarray | None = None,
            scale: np.ndarray | None = None) -> Path:
    vi = helper.make_tensor_value_info
    if w is not None:
        nodes, inits = [helper.make_node("MatMul", ["x", "w"], ["y"])], [
            numpy_helper.from_array(w, "w")]
    else:
        nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["w"], axis=1),
                 helper.make_node("MatMul", ["x", "w"], ["y"])]
        inits = [numpy_helper.from_array(q, "q"), numpy_helper.from_array(scale, "s"),
                 numpy_helper.from_array(np.zeros(scale.shape, np.int8), "z")]
    graph = helper.make_graph(nodes, "g", [vi("x", TensorProto.FLOAT, [1, 4])],
                              [vi("y", TensorProto.FLOAT, [1, 2])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def test_the_weights_judge_sees_an_infinite_dequantized_weight(tmp_path):
    """What int8 wrote before the fuzzer found it: a weight of 3.4e38 as 127 times a scale that
    had rounded up, inf on ONNX Runtime, and NaN once an opposite extreme is added to it."""
    w = np.array([[MAX, 1], [-MAX, 1], [0, 1], [0, 1]], np.float32)
    source = _matmul(tmp_path / "m.onnx", w=w)
    rounded_up = np.float32(MAX / np.float32(127))
    q = np.array([[127, 127], [-127, 127], [0, 0], [0, 0]], np.int8)
    bad = _matmul(tmp_path / "bad.onnx", q=q, scale=np.array([rounded_up, 1 / 127], np.float32))
    good = _matmul(tmp_path / "good.onnx", q=q, scale=np.array(
        [np.nextafter(rounded_up, np.float32(0)), 1 / 127], np.float32))
    assert fuzz_weights._check_output(source, bad) == "a dequantized weight is not finite"
    assert fuzz_weights._check_output(source, good) is None
    zero = _matmul(tmp_path / "zero.onnx", q=q, scale=np.array([0, 1], np.float32))
    assert fuzz_weights._check_output(source, zero) == "1 of 1 scales not finite and positive"


def test_every_hostile_number_is_one_the_cli_refuses():
    """The numbers cases judge only a refusal safe: every value the generator makes must be
    one cli/numbers.py refuses (a valid one would be a false failure), and it makes each kind."""
    import random

    from cli.numbers import parse_float, parse_int

    rng = random.Random(0)
    for kind, parse in ((int, parse_int), (float, parse_float)):
        values = [fuzz_numbers.hostile_number(rng, kind) for _ in range(3000)]
        for value in values:
            with pytest.raises(ValueError):
                parse(value)
        assert any(len(v) >= 1000 for v in values) and any("_" in v for v in values)
        assert any(c in fuzz_numbers.OTHER_DIGITS for v in values for c in v)
    flags = {flag for _, flag, _, _ in fuzz_numbers.number_options()}
    assert {"--steps", "--seed", "--atol", "--jobs", "--error-growth", "--dim",
            "--prompt", "--accuracy"} <= flags and "--port" not in flags  # serve is left out


def test_the_numbers_judge_fails_what_it_must(tmp_path):
    one = "Usage: x\nError: Invalid value for '--steps': \"\\u0663\" is not an integer\n"
    judge = fuzz_numbers.refused_cleanly
    assert judge(_out(tmp_path / "a", one), 2, "--steps", ascii_only=True) is None
    assert judge(_out(tmp_path / "b", one), 0, "--steps") == "exit 0, not 2"
    assert judge(_out(tmp_path / "c", one), 1, "--steps") == "exit 1, not 2"
    assert judge(_out(tmp_path / "d", one + "Traceback (most recent call last):\n"), 2) == \
        "a traceback or internal error"
    assert judge(_out(tmp_path / "e", "internal error: ValueError: x\n"), 2) == \
        "a traceback or internal error"
    assert judge(_out(tmp_path / "f", one * 2), 2) == "2 error lines, not 1"
    assert judge(_out(tmp_path / "g", one), 2, "--seed") == "the error line does not name --seed"
    raw = one.replace("\\u0663", "\u0663")
    assert judge(_out(tmp_path / "h", raw), 2, "--steps", ascii_only=True) == \
        "output not ASCII only"
    written = _out(tmp_path / "i", one)
    (written / "r.jsonl").write_text("{}")
    assert judge(written, 2) == "wrote ['r.jsonl']"


def test_the_lstm_activation_judge_fails_what_it_must(tmp_path):
    def outcome(code, exit_code, stderr=""):
        folder = tmp_path / f"{code}-{exit_code}-{len(stderr)}"
        folder.mkdir()
        made = fuzz_numbers.lstm_activation(code)(folder, tmp_path)
        assert made.must_refuse == (not 1 <= code <= 5)
        return made.outcome(_out(folder / "out", stderr), exit_code)

    refusal = "error: lstm.tflite: its cell activation 6 is none of the schema's\n"
    assert outcome(4, 0) is None and outcome(6, 2, refusal) is None
    assert outcome(4, 2, refusal) == "exit 2, not 0"
    assert outcome(6, 0) == "exit 0, not 2"
    assert outcome(200, 1, refusal) == "exit 1, not 2"
    assert outcome(5, 0, "Traceback (most recent call last):\n") == \
        "a traceback or internal error"


def test_the_lstm_activation_byte_is_the_code_drawn():
    """Codes 128..255 are written as the int8 the schema's field is: the byte is the code."""
    from ai_edge_litert import schema_py_generated as schema

    for code in (1, 6, 127, 128, 255):
        op = schema.Model.GetRootAs(fuzz_numbers._lstm(code)).Subgraphs(0).Operators(0)
        options = schema.UnidirectionalSequenceLSTMOptions()
        table = op.BuiltinOptions()
        options.Init(table.Bytes, table.Pos)
        assert options.FusedActivationFunction() & 0xFF == code


def test_the_compute_target_takes_no_float16():
    source = json.loads((ROOT / "converter" / "targets" / "data" / "chromium-litert.json")
                        .read_text())
    def types(document):
        if isinstance(document, dict):
            return {t for k, v in document.items()
                    for t in (v if k == "dataTypes" and isinstance(v, list) else types(v))}
        return {t for v in document for t in types(v)} if isinstance(document, list) else set()
    assert "float16" in types(source)
    assert "float16" not in types(fuzz_numbers._without_float16(source)) and types(source)
