"""The command line: --version, --help everywhere, inspect, validate, and bad input handling."""
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter import GraphBuilder

COMMANDS = ["inspect", "validate", "ops", "convert", "verify", "run", "check", "targets", "zoo",
            "browser-install", "serve"]


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _sample(tmp_path: Path, suffix=".webnn") -> Path:
    b = GraphBuilder("sample")
    x = b.input("x", "float32", [1, 3, 8, 8])
    w = b.constant(np.ones((4, 3, 3, 3), np.float32), name="w")
    bias = b.constant(np.zeros(4, np.float32), name="bias")
    y = b.conv2d(x, w, padding=[1, 1, 1, 1], bias=bias, name="conv")
    t = b.transpose(b.relu(y, name="r"), permutation=[0, 2, 3, 1], name="t")
    g = b.build({"y": t})
    path = tmp_path / f"sample{suffix}"
    converter.save(g, path)
    return path


def test_version():
    r = run("--version")
    assert r.exit_code == 0 and r.output.strip() == f"webnn-convert, version {converter.__version__}"


@pytest.mark.parametrize("command", [[]] + [[c] for c in COMMANDS])
def test_help_everywhere(command):
    r = run(*command, "--help")
    assert r.exit_code == 0 and "Usage:" in r.output


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_inspect_json(tmp_path, suffix):
    r = run("inspect", _sample(tmp_path, suffix), "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert info["inputs"] == {"x": {"dataType": "float32", "shape": [1, 3, 8, 8]}}
    assert info["outputs"] == {"y": {"dataType": "float32", "shape": [1, 8, 8, 4]}}
    assert info["opHistogram"] == {"conv2d": 1, "relu": 1, "transpose": 1}
    assert info["constants"] == 2 and info["constantBytes"] == (108 + 4) * 4
    assert info["transposes"] == 1


def test_inspect_table(tmp_path):
    r = run("inspect", _sample(tmp_path))
    assert r.exit_code == 0
    assert "3 operations, 2 constants (448 B), 1 transposes" in r.output
    assert "conv2d" in r.output


def test_validate_valid(tmp_path):
    path = _sample(tmp_path)
    r = run("validate", path)
    assert r.exit_code == 0 and r.output.strip() == f"{path}: valid (3 operations)"


def _one_line_error(result, code):
    assert result.exit_code == code, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert "Traceback" not in result.output
    return lines


def test_validate_lists_every_problem(tmp_path):
    path = tmp_path / "bad.webnn"
    path.write_text('webnn_graph "bad" v1 {\n inputs { x: f32[2, 3]; }\n nodes {\n'
                    '  a = relu(x, foo=1);\n  b = add(a, y);\n  c = softmax(x, axis=7);\n }\n'
                    ' outputs { a; c; }\n}\n')
    r = run("validate", path)
    lines = _one_line_error(r, 1)
    # relu's unknown option and softmax's axis are both found; add reads relu's result and
    # an undefined name, reported once.
    problems = lines[:-1]
    assert len(problems) >= 2, lines
    assert lines[-1] == f"{path}: invalid ({len(problems)} problems)"
    assert any("foo" in p for p in problems) and any("axis 7" in p for p in problems)


BAD_WEBNN = {
    "syntax": ('webnn_graph "g" v1 {\n inputs { x: f32[2]; }\n nodes { y = relu(x) }\n'
               ' outputs { y; }\n}\n', r"bad\.webnn:3:"),
    "unknown_op": ('webnn_graph "g" v1 {\n inputs { x: f32[2]; }\n nodes { y = conv3d(x); }\n'
                   ' outputs { y; }\n}\n', "unknown op 'conv3d'"),
    "dtype": ('webnn_graph "g" v1 {\n inputs { x: i32[2]; }\n nodes { y = sqrt(x); }\n'
              ' outputs { y; }\n}\n', "data type int32 is not allowed"),
    "rank": ('webnn_graph "g" v1 {\n inputs { x: f32[2]; }\n nodes { y = softmax(x, axis=0); '
             'z = conv2d(x, x); }\n outputs { z; }\n}\n', "rank 1 is not allowed"),
    "undefined": ('webnn_graph "g" v1 {\n inputs { x: f32[2]; }\n nodes { y = relu(q); }\n'
                  ' outputs { y; }\n}\n', "'q'"),
    "duplicate": ('webnn_graph "g" v1 {\n inputs { x: f32[2]; }\n nodes { y = relu(x); '
                  'y = abs(x); }\n outputs { y; }\n}\n', "duplicate"),
    "too_large": ('webnn_graph "g" v1 {\n inputs { x: f32[65536, 65536]; }\n nodes { y = relu(x); }\n'
                  ' outputs { y; }\n}\n', "limit"),
}


@pytest.mark.parametrize("case", sorted(BAD_WEBNN))
def test_bad_graph_files_fail_with_one_line(tmp_path, case):
    text, pattern = BAD_WEBNN[case]
    path = tmp_path / "bad.webnn"
    path.write_text(text)
    r = run("inspect", path)
    lines = _one_line_error(r, 2)
    assert len(lines) == 1 and lines[0].startswith("error: ")
    if pattern:
        import re
        assert re.search(pattern, lines[0]), lines[0]
    v = run("validate", path)
    assert v.exit_code == 1 and "Traceback" not in v.output


def test_bad_weights_fail_with_one_line(tmp_path):
    path = _sample(tmp_path)
    weights = tmp_path / "sample.weights"
    weights.write_bytes(b"XXXX" + weights.read_bytes()[4:])
    lines = _one_line_error(run("inspect", path), 2)
    assert len(lines) == 1 and "WGWT" in lines[0]


def test_escaping_weights_key_fails(tmp_path):
    path = _sample(tmp_path, ".json")
    manifest = tmp_path / "sample.manifest.json"
    m = json.loads(manifest.read_text())
    m["tensors"]["../../etc/passwd"] = m["tensors"].pop("w")
    manifest.write_text(json.dumps(m))
    lines = _one_line_error(run("inspect", path), 2)
    assert len(lines) == 1 and "../../etc/passwd" in lines[0]


def test_missing_file_is_one_line():
    lines = _one_line_error(run("inspect", "no/such/file.webnn"), 2)
    assert len(lines) == 1 and "no/such/file.webnn" in lines[0]


def test_debug_shows_traceback(tmp_path):
    path = tmp_path / "bad.webnn"
    path.write_text("not a graph")
    proc = subprocess.run([sys.executable, "-m", "cli.main", "--debug", "inspect", str(path)],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    plain = subprocess.run([sys.executable, "-m", "cli.main", "inspect", str(path)],
                           capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1


def test_validate_accepts_the_formats_md_example_and_a_version_1_json(tmp_path):
    from tests.formats.conftest import FORMATS_MD_EXAMPLE, write_weights_file

    (tmp_path / "tiny.webnn").write_text(FORMATS_MD_EXAMPLE)
    write_weights_file(tmp_path, "tiny", {"w": np.ones((8, 3, 3, 3), np.float32),
                                          "b": np.zeros(8, np.float32)})
    r = run("validate", tmp_path / "tiny.webnn")
    assert r.exit_code == 0 and r.output.strip().endswith("valid (4 operations)"), r.output
    v1 = {"format": "webnn-graph-json", "version": 1,
          "inputs": {"x": {"dataType": "float32", "shape": [2]}}, "consts": {},
          "nodes": [{"id": "y", "op": "relu", "inputs": ["x"], "options": {}}],
          "outputs": {"y": "y"}}
    (tmp_path / "v1.json").write_text(json.dumps(v1))
    r = run("validate", tmp_path / "v1.json")
    assert r.exit_code == 0, r.output
    # And a broken op in a version-1 file is caught with its reason.
    v1["nodes"][0]["op"] = "conv3d"
    (tmp_path / "bad.json").write_text(json.dumps(v1))
    r = run("validate", tmp_path / "bad.json")
    assert r.exit_code == 1 and "unknown op 'conv3d'" in r.output
