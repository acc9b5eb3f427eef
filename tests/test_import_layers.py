"""The packages of converter/ form layers, nothing imports upward, and nothing imports in a circle.

The layers, lowest first, are LAYERS below: the one place they are written (docs point here).
A module may import from its own layer or any layer below it, never above. No two packages
import each other, through any chain of imports (the packages of one layer included), and no
two modules do either, except inside the packages listed in MAY_CYCLE, each for its reason.

What counts as an import: every `import` and `from ... import` of a converter or cli module,
at module level or inside a function (a function-local import is a real dependency, only
deferred: an upward one there is as upward as at the top). Imports under `if TYPE_CHECKING:`
do not count: they never run. An import names the module it loads: `from .formats import
weights` is an import of converter/formats/weights.py, `from .formats import load_graph` one
of converter/formats/__init__.py.

Every top-level module and package of converter/ has a layer here: a new one is placed on
purpose. The root of converter/ keeps only the API, `python -m converter`, and base modules
(at most MAX_ROOT_MODULES files).
"""
from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("converter", "cli")

LAYERS: list[set[str]] = [
    {"errors", "dtypes", "schemas", "budget", "threads", "files"},           # 0 base
    {"ir"},                                                                  # 1
    {"ops"},                                                                 # 2
    {"formats", "importers", "passes", "lowering", "exporters", "emit"},     # 3
    {"catalogue", "dynamic"},                                                # 4
    {"targets"},                                                             # 5
    {"conversion", "runtimes", "devices"},                                   # 6
    {"state"},                                                               # 7
    {"verification", "probe"},                                               # 8
    {"__init__"},                                                            # 9 the API
    {"zoo", "testing"},                                                      # 10
    {"cli", "__main__"},              # 11: the command line (`python -m converter` runs it)
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}

# Packages whose modules may import each other, and why. The registries: a table imports its
# families when first used, and each family imports the table's decorator to register into it.
# A package is taken off this list once no cycle is left in it (the test says so).
MAY_CYCLE = {
    "converter.ops": "the op catalogue and its op families",
    "converter.passes": "the pass registry, the decompositions and the rank rules",
    "converter.lowering.onnx": "the ONNX lowering table and its op families",
    "converter.exporters.tflite": "the TFLite exporter table and its op families",
    "converter.importers.tflite": "the TFLite rule table and its rules",
    "converter.ir": "Graph.problems() runs verify.py, which checks shapes with graph.py's "
                    "shape_problem (imported from graph.py by formats, ops and importers too)",
}

MAX_ROOT_MODULES = 8  # converter/*.py, __init__ and __main__ included


def _modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages (a package is its
    __init__)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module `name` loads: itself, or the nearest package above it that is ours."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """The modules of ours `module` imports, with the line of each import."""
    path = modules[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                up = node.level - 1
                assert up < len(package), f"{path}:{node.lineno} imports beyond the package"
                base = ".".join(package[:len(package) - up] +
                                (node.module.split(".") if node.module else []))
            else:
                base = node.module
            if base.split(".")[0] not in PACKAGES:
                continue
            # `from X import name`: the module X.name when there is one, else X itself
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
        else:
            continue
        for target in targets:
            known = _known(target, modules)
            assert known is not None, f"{path}:{node.lineno} imports {target}, which is not there"
            found.append((known, node.lineno))
    return found


@functools.cache
def _graph(root: Path = ROOT) -> dict[str, dict[str, list[str]]]:
    """module -> {module it imports -> where}, over every module of the packages."""
    modules = _modules(root)
    graph: dict[str, dict[str, list[str]]] = {m: defaultdict(list) for m in modules}
    for module in modules:
        for target, line in imports_of(module, modules):
            if target != module:
                graph[module][target].append(f"{modules[module].relative_to(root)}:{line}")
    return graph


def unit(module: str) -> str:
    """What has a layer: a top-level module or package of converter/ (`__init__` is the API),
    or the command line as a whole."""
    parts = module.split(".")
    if parts[0] == "cli":
        return "cli"
    return parts[1] if len(parts) > 1 else "__init__"


def _unit_edges(graph) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, targets in graph.items():
        for target, where in targets.items():
            if unit(module) != unit(target):
                edges[(unit(module), unit(target))] += where
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(component: list[str], package: str) -> bool:
    return all(m == package or m.startswith(package + ".") for m in component)


def _may_cycle(component: list[str]) -> bool:
    return any(_within(component, package) for package in MAY_CYCLE)


def _describe(component: list[str], graph) -> str:
    members = set(component)
    links = [f"{a} -> {b} ({graph[a][b][0]})" for a in component for b in sorted(graph[a])
             if b in members]
    return "; ".join(links)


def test_every_module_has_a_layer():
    units = {unit(m) for m in _modules()}
    assert sorted(units - set(LAYER)) == []
    assert sorted(set(LAYER) - units) == []  # and no layer names what is gone
    # nothing in converter/ but its __main__ imports cli
    assert LAYER["cli"] > max(LAYER[u] for u in units - {"__main__", "cli"})


def test_no_module_of_converter_is_named_like_a_name_of_its_api():
    """Importing converter/verify/x.py sets the attribute `converter.verify` to the package (the
    import system puts every submodule on its parent), replacing the API function: so no
    top-level module or package takes a name the API exports (hence verification/, not
    verify/)."""
    import converter

    names = {unit(m) for m in _modules() if m.startswith("converter.")}
    assert sorted(names & set(converter.__all__)) == []


def test_the_root_of_converter_holds_few_modules():
    root = sorted(p.name for p in (ROOT / "converter").glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_no_upward_imports():
    upward = [f"{a} (layer {LAYER[a]}) imports {b} (layer {LAYER[b]}): {', '.join(where)}"
              for (a, b), where in _unit_edges(_graph()).items()
              if a in LAYER and b in LAYER and LAYER[b] > LAYER[a]]  # unplaced: test above
    assert upward == []


def test_no_cycles_between_packages():
    graph = _graph()
    edges: dict[str, set[str]] = defaultdict(set)
    for a, b in _unit_edges(graph):
        edges[a].add(b)
    cycles = [" <-> ".join(c) for c in _cycles(edges)]
    assert cycles == []


def test_no_cycles_between_modules_but_where_listed():
    graph = _graph()
    cycles = _cycles({m: set(targets) for m, targets in graph.items()})
    unlisted = [_describe(c, graph) for c in cycles if not _may_cycle(c)]
    assert unlisted == []
    # a package listed without a cycle left in it is taken off the list
    assert sorted(p for p in MAY_CYCLE if not any(_within(c, p) for c in cycles)) == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_checker_sees_an_upward_import(tmp_path):
    """The rule is not vacuous: in a package laid out like ours, a function-local upward import
    (relative or absolute) is found, and one under TYPE_CHECKING is not."""
    root = _package(tmp_path, {
        "converter/__init__.py": "", "converter/errors.py": "",
        "converter/ir/__init__.py": "",
        "converter/ir/graph.py":
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from ..targets import Target\n"
            "from .. import errors\n"
            "def f():\n    from ..passes import run_passes\n"
            "def g():\n    import converter.zoo.runner\n"
            "def h():\n    from cli.main import main\n",
        "converter/passes/__init__.py": "", "converter/targets/__init__.py": "",
        "converter/zoo/__init__.py": "", "converter/zoo/runner.py": "",
        "cli/__init__.py": "", "cli/main.py": ""})
    modules = _modules(root)
    assert imports_of("converter.ir.graph", modules) == [
        ("converter.errors", 4), ("converter.passes", 6), ("converter.zoo.runner", 8),
        ("cli.main", 10)]
    assert sorted(_unit_edges(_graph(root))) == [("ir", "cli"), ("ir", "errors"),
                                                 ("ir", "passes"), ("ir", "zoo")]


def test_the_checker_sees_a_cycle_between_modules_of_a_package(tmp_path):
    """Two modules of formats/ that import each other (one of them in a function) are a cycle
    the test reports; the same in a registry listed is allowed; a chain without a way back is
    none."""
    root = _package(tmp_path, {
        "converter/__init__.py": "", "converter/formats/__init__.py": "",
        "converter/formats/reader.py": "from .text import parse\n",
        "converter/formats/text.py": "def parse():\n    from .reader import read\n",
        "converter/formats/document.py": "",
        "converter/formats/state.py": "from . import document\n",
        "converter/ops/__init__.py": "from . import registry\n",
        "converter/ops/registry.py": "def all_ops():\n    from . import conv\n",
        "converter/ops/conv.py": "from .registry import op\n"})
    graph = _graph(root)
    cycles = _cycles({m: set(t) for m, t in graph.items()})
    assert cycles == [["converter.formats.reader", "converter.formats.text"],
                      ["converter.ops.conv", "converter.ops.registry"]]
    assert [_may_cycle(c) for c in cycles] == [False, True]
    assert _describe(cycles[0], graph) == (
        "converter.formats.reader -> converter.formats.text (converter/formats/reader.py:1); "
        "converter.formats.text -> converter.formats.reader (converter/formats/text.py:2)")
