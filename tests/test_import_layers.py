"""The packages of converter/ form layers, and nothing imports upward.

    base (errors, dtypes, ...) -> ir -> ops -> formats / importers / passes / lowering /
    exporters / emit ... -> targets -> verification / runtimes ... -> the API -> zoo -> cli

A module may import from its own layer or any layer below it, never above; and the packages
of one layer import each other without cycles. Function-local imports count (they are real
dependencies, only deferred); imports under `if TYPE_CHECKING:` do not (they never run).
Every top-level module of converter/ must have a layer here: a new one is placed on purpose.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "converter"

LAYERS: list[set[str]] = [
    {"errors", "dtypes", "schemas", "fetch", "budget", "threads", "file_guard",
     "mapped_files"},                                                        # 0 base
    {"ir", "io_permutations"},                                               # 1
    {"ops"},                                                                 # 2
    {"formats", "importers", "passes", "lowering", "exporters", "emit",      # 3
     "builder", "reference", "summary"},
    {"catalogue", "by_suffix", "dynamic", "source_ops"},                     # 4
    {"targets"},                                                             # 5
    {"parity", "op_budgets", "execute", "runtimes", "devices", "source_runs",           # 6
     "verification", "verification_steps", "bisect", "session", "state", "generation",
     "verification_decode", "variants_conversion", "verification_notes",
     "verification_text"},
    {"__init__"},                                                            # 7 the API
    {"zoo", "testing"},                                                      # 8
    {"cli", "__main__"},              # 9: the command line (`python -m converter` runs it)
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def imports_of(path: Path, package: Path = PACKAGE) -> list[tuple[str, int]]:
    """The top-level converter modules `path` imports (by name), with line numbers."""
    rel = path.relative_to(package)
    folder = list(rel.parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            up = node.level - 1
            assert up <= len(folder), f"{rel}:{node.lineno} imports beyond the package"
            target = folder[:len(folder) - up] + (node.module.split(".") if node.module else [])
            names = target[:1] or [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "cli":
                names = ["cli"]
            elif parts[0] == "converter":
                names = parts[1:2] or [a.name for a in node.names]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] if a.name.startswith("converter.") else "cli"
                     for a in node.names
                     if a.name.startswith("converter.") or a.name.split(".")[0] == "cli"]
        else:
            continue
        found += [("__init__" if n == "__version__" else n, node.lineno) for n in names]
    return found


def _module(path: Path, package: Path = PACKAGE) -> str:
    return path.relative_to(package).parts[0].removesuffix(".py")


def _edges(package: Path = PACKAGE) -> dict[tuple[str, str], list[str]]:
    """(importing module, imported module) -> where, over every file of the package."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        source = _module(path, package)
        for target, line in imports_of(path, package):
            if target != source:
                edges[(source, target)].append(f"{path.relative_to(package.parent)}:{line}")
    return edges


def test_every_module_has_a_layer():
    modules = {_module(p) for p in PACKAGE.rglob("*.py")}
    assert sorted(modules - set(LAYER)) == []
    # nothing in converter/ but its __main__ imports cli
    assert LAYER["cli"] > max(LAYER[m] for m in modules - {"__main__"})


def test_no_upward_imports():
    upward = [f"{a} (layer {LAYER[a]}) imports {b} (layer {LAYER[b]}): {', '.join(where)}"
              for (a, b), where in _edges().items()
              if a in LAYER and b in LAYER and LAYER[b] > LAYER[a]]
    assert upward == []


def test_no_cycles_between_packages():
    edges = _edges()
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    cycles = []
    for a, b in edges:  # a -> b and a path back from b to a
        seen, stack = set(), [b]
        while stack:
            node = stack.pop()
            if node == a:
                cycles.append(f"{a} -> {b} ({edges[(a, b)][0]}) -> ... -> {a}")
                break
            if node not in seen:
                seen.add(node)
                stack.extend(graph[node])
    assert cycles == []


def test_the_checker_sees_an_upward_import(tmp_path):
    """The rule is not vacuous: in a package laid out like ours, a function-local upward import
    (relative or absolute) is found, and one under TYPE_CHECKING is not."""
    package = tmp_path / "converter"
    (package / "ir").mkdir(parents=True)
    (package / "ir" / "graph.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from ..targets import Target\n"
        "def f():\n    from ..passes import run_passes\n"
        "def g():\n    import converter.zoo.runner\n"
        "def h():\n    from cli.main import main\n")
    (package / "errors.py").write_text("")
    assert imports_of(package / "ir" / "graph.py", package) == [("passes", 5), ("zoo", 7),
                                                                   ("cli", 9)]
    assert sorted(_edges(package)) == [("ir", "cli"), ("ir", "passes"), ("ir", "zoo")]
