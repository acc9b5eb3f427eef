"""The ONNX rule modules load as models need them (rules/__init__.py): the table of which
module registers which op type is exact, a model's conversion imports the modules of its own
op types only, and every op type with a rule imports and converts in a fresh interpreter that
loaded nothing else up front."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TINY_CNN = ROOT / "models" / "tiny_cnn.onnx"


def _fresh(code: str) -> object:
    """Run `code` in a fresh interpreter; the JSON its last line prints."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_table_names_the_module_of_every_registered_op_type_and_nothing_else():
    found = _fresh(
        "import json\n"
        "from converter.importers.onnx import rules\n"
        "from converter.importers.onnx.registry import _RULES, known_op_types\n"
        "known_op_types()  # loads every module\n"
        "print(json.dumps(sorted([(d + ':' + op if d else op), rules._MODULE_OF.get(d + ':' + op"
        " if d else op), r.__module__.rsplit('.', 1)[1]] for (d, op), vs in _RULES.items()"
        " for _, r in vs)))")
    wrong = [(op, listed, actual) for op, listed, actual in found if listed != actual]
    assert wrong == []  # (op type, module the table names, module registering it)
    registered = {op for op, _, _ in found}
    table = _fresh("import json; from converter.importers.onnx import rules; "
                   "print(json.dumps(sorted(rules._MODULE_OF)))")
    assert sorted(registered) == table
    assert len(table) > 150  # the whole importer, not a few families


def test_a_conversion_imports_the_rule_modules_of_its_op_types_only(tmp_path):
    loaded = _fresh(
        "import json, sys, converter\n"
        "from converter.importers.onnx import rules\n"
        f"g = converter.load({str(TINY_CNN)!r})\n"
        "print(json.dumps([sorted(m.rsplit('.', 1)[1] for m in sys.modules"
        " if m.startswith('converter.importers.onnx.rules.')), len(g.operations),"
        " {op: rules._MODULE_OF[op] for op in ('Add', 'Conv', 'Flatten', 'Gemm',"
        " 'GlobalAveragePool', 'MaxPool', 'Relu', 'Softmax')}]))")
    modules, operations, needed = loaded
    assert operations == 10  # tiny_cnn's op types: Add Conv Flatten Gemm GlobalAveragePool
    # MaxPool Relu Softmax; their modules load (and what those import: _emit, integer_math)
    assert set(needed.values()) == {"activation", "conv", "elementwise", "matmul", "pool",
                                    "shape_ops"}
    assert set(needed.values()) <= set(modules)
    assert set(modules) - set(needed.values()) <= {"_emit", "integer_math"}


def test_every_op_type_with_a_rule_is_found_in_a_fresh_interpreter():
    # Each op type is looked up first thing after a fresh start (only the table loaded), as
    # a model holding it would: the lookup must import its module and find its rule.
    found = _fresh(
        "import json, sys\n"
        "from converter.importers.onnx import rules\n"
        "from converter.importers.onnx.registry import rule_for\n"
        "missing = []\n"
        "for name in sorted(rules._MODULE_OF):\n"
        "    domain, _, op = name.rpartition(':')\n"
        "    if rule_for(domain, op, 10 ** 6) is None:\n"
        "        missing.append(name)\n"
        "print(json.dumps(missing))")
    assert found == []


def test_an_op_type_no_rule_imports_loads_every_module_and_stays_unsupported():
    found = _fresh(
        "import json, sys\n"
        "from converter.importers.onnx import rules\n"
        "from converter.importers.onnx.registry import rule_for\n"
        "rule = rule_for('', 'NoSuchOp', 21)\n"
        "print(json.dumps([rule is None, sorted(m.rsplit('.', 1)[1] for m in sys.modules"
        " if m.startswith('converter.importers.onnx.rules.'))]))")
    assert found[0] is True
    assert "control_flow" in found[1] and len(found[1]) >= 20
