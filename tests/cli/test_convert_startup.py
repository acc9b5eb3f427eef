"""What a plain `convert MODEL -o OUT.webnn` loads: only what converting and writing need.

Start-up is most of a small model's conversion (issue 13), so the modules of other commands
and paths (verification, staging folders, random-token helpers) are imported where they are
used. Each check runs the real command in a fresh interpreter and reads its sys.modules.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"

# Imported by other paths only: --verify and what it pulls in, schema checks, random-token
# helpers (`secrets` brings hmac, hashlib, base64), the graph-file reader, weight hashing
# (variants only). (tempfile and shutil, which only staged
# saves use, are not listed: the onnx package's own start-up imports them.)
NOT_FOR_A_PLAIN_CONVERSION = ("converter.verification.core", "converter.verification.parity",
                              "cli.commands.verify_model", "onnxruntime", "secrets",
                              "jsonschema", "hashlib", "converter.formats.graph_from_doc")

_RUN = """
import json, sys
from cli.main import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit as e:
    if e.code:
        raise
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_a_plain_conversion_imports_no_verification_or_staging_code(tmp_path):
    out = tmp_path / "tiny.webnn"
    loaded = _modules_after("convert", str(TINY_CNN), "-o", str(out))
    assert out.is_file() and (tmp_path / "tiny.weights").is_file()
    assert "converter.importers.onnx" in loaded  # the probe sees the conversion's imports
    assert sorted(set(NOT_FOR_A_PLAIN_CONVERSION) & loaded) == []


def test_convert_with_verify_still_loads_and_runs_verification(tmp_path):
    out = tmp_path / "tiny.webnn"
    loaded = _modules_after("convert", str(TINY_CNN), "-o", str(out), "--verify")
    assert out.is_file()
    assert {"converter.verification.core", "cli.commands.verify_model"} <= loaded
    assert not list(tmp_path.glob(".webnn-convert.*"))  # the staging folder is gone


_PRELOAD_THEN_LOAD = """
import json, sys
from converter.conversion.by_suffix import import_reader, load_any
import_reader(sys.argv[1])
before = set(sys.modules)
load_any(sys.argv[1])
readers = {"converter.importers.onnx", "converter.importers.tflite",
           "converter.dynamic.variants_file"}
print(json.dumps(sorted(readers & (set(sys.modules) - before))))
"""


def test_the_preloaded_reader_is_the_one_each_suffix_is_read_with(tmp_path):
    # `convert` imports the source's reader before it resumes the collector
    # (by_suffix.import_reader, from a table of its own); a table that drifted from load_any's
    # dispatch would leave the reader to be imported after, unseen but slower.
    from converter.conversion.by_suffix import _READERS, load_any, write_any

    graph = load_any(TINY_CNN)
    sources = [TINY_CNN]
    for suffix in (".tflite", ".webnn", ".json"):
        sources.append(tmp_path / f"tiny{suffix}")
        write_any(graph, sources[-1])
    assert sorted({s.suffix for s in sources}) == sorted(_READERS)
    for source in sources:
        proc = subprocess.run([sys.executable, "-c", _PRELOAD_THEN_LOAD, str(source)],
                              capture_output=True, text=True, cwd=ROOT,
                              env={"PYTHONPATH": str(ROOT), "PATH": ""})
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [], source.suffix
