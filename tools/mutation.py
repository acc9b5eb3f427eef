"""Mutation testing for the code that decides whether a conversion is right.

    python tools/mutation.py                    # every module in MODULES, one after the other
    python tools/mutation.py passes.layout ops  # some of them (a name, or a prefix of names)
    python tools/mutation.py --list             # the table: module -> files, test folders

For each module it plants one small bug at a time (tools/mutation_ops.py: operator swaps,
comparison flips, constant +1, negated conditions, swapped arguments, removed statements), runs
only that module's test folders, and counts the mutant *killed* when a test fails (or hangs),
*survived* when they all pass. It prints the score (killed / mutants) and every survivor as
file:line and the mutation; survivors listed in tests/mutation_equivalents.md (why the mutation
cannot change behaviour) are marked as such.

Why it is fast enough to run per module in minutes:
  * one run of the module's tests under `coverage`, with one coverage context per test, tells
    which tests execute each line; a mutant runs only those tests, most likely killers first,
    and stops at the first failure; a mutant on a line no test executes survives unrun;
  * the tests are collected once; each mutant runs in a fork of the collected session with the
    mutated function's code swapped into the live function objects (so registries and
    `from x import f` copies see it too);
  * a mutant on code that runs at import time (module-level tables, decorators, anything a test
    module computes while being collected) cannot be swapped in afterwards: it runs in a fork of
    a process that has not imported the project yet, with an import hook serving the mutated
    module.
Everything runs under `nice -n 10`, with at most --jobs (default 1, at most 2) forks at once,
and BLAS/ORT threads limited to one. Stopped by SIGTERM or Ctrl-C, it kills its forks' process
groups (the forks' own forks and subprocesses with them) before it exits: no test run is left.
"""
from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from mutation_modules import MODULES  # noqa: E402
from mutation_ops import candidates, find_code  # noqa: E402
from mutation_procs import (  # noqa: E402
    fork_group, read_result, reaped, remove_scratch, result_file, scratch, silence, stop,
    wait_child)

EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.md"
_OUT = [sys.stdout]   # where per-mutant lines go (a fork running pytest points it elsewhere)
HEAVY = ("numpy", "onnx", "onnx.helper", "onnx.numpy_helper", "onnxruntime", "flatbuffers",
         "ai_edge_litert.interpreter", "hypothesis", "pytest", "coverage", "_pytest.runner")


@dataclass
class Mutant:
    path: str          # relative to ROOT
    index: int
    line: int
    description: str
    owner: str | None
    tests: list[str] = field(default_factory=list)
    path_kind: str = "fast"   # fast | fresh | uncovered
    status: str = ""          # killed | survived | timeout | uncovered
    seconds: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}: {self.description}"


def source_files(entries: list[str]) -> list[Path]:
    files: list[Path] = []
    for entry in entries:
        p = ROOT / "converter" / entry
        files.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return [f for f in files if f.exists()]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def existing(tests: list[str]) -> list[str]:
    return [t for t in tests if (ROOT / t).exists()]


# --- running pytest in a fork ---------------------------------------------------------------
class _Select:
    """pytest plugin: keep only the chosen test ids, in the order given."""

    def __init__(self, order: list[str] | None):
        self.order = None if order is None else {t: i for i, t in enumerate(order)}

    def pytest_collection_modifyitems(self, session, config, items):
        if self.order is None:
            return
        kept = [it for it in items if it.nodeid in self.order]
        kept.sort(key=lambda it: self.order[it.nodeid])
        items[:] = kept


def _pytest_args(test_paths: list[str], first_failure: bool) -> list[str]:
    # Each run's temporary folders in the tool's scratch folder (a fresh name a call: runs in
    # forks that exist at once must not share one), removed with it.
    basetemp = tempfile.mkdtemp(prefix="pytest-", dir=scratch())
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist",
            "--rootdir", str(ROOT), "-o", "addopts=", "-W", "ignore::DeprecationWarning",
            "--basetemp", basetemp]
    if first_failure:
        args.append("-x")
    return args + test_paths


# --- baseline: which tests execute which line, how long each test takes ------------------------
def baseline(files: list[Path], test_paths: list[str]) -> dict:
    out = result_file()
    pid = fork_group()
    if pid == 0:
        try:
            import coverage
            import pytest

            cov = coverage.Coverage(data_file=None, include=[str(f) for f in files])
            durations: dict[str, float] = {}
            failed: list[str] = []

            class Contexts:
                @pytest.hookimpl(tryfirst=True)
                def pytest_runtest_setup(self, item):
                    cov.switch_context(item.nodeid)

                def pytest_runtest_logreport(self, report):
                    durations[report.nodeid] = durations.get(report.nodeid, 0) + report.duration
                    if report.failed:
                        failed.append(report.nodeid)

                def pytest_runtest_teardown(self, item, nextitem):
                    pass

            silence()
            cov.start()
            import importlib
            for f in files:  # import-time lines run here, in the empty context, not in a test
                importlib.import_module(module_name(f))
            code = pytest.main(_pytest_args(test_paths, False), plugins=[Contexts()])
            cov.stop()
            data = cov.get_data()
            lines = {}
            for f in files:
                by_line = data.contexts_by_lineno(str(f))
                lines[str(f)] = {str(k): sorted(v) for k, v in by_line.items()}
            Path(out).write_text(json.dumps(
                {"code": int(code), "lines": lines, "durations": durations, "failed": failed}))
            os._exit(0)
        except BaseException:
            import traceback
            Path(out).write_text(json.dumps({"error": traceback.format_exc()}))
            os._exit(1)
    wait_child(pid, 3600)
    result = json.loads(read_result(out) or "{}")
    if "error" in result:
        raise SystemExit(f"baseline run failed:\n{result['error']}")
    return result


# --- planning ---------------------------------------------------------------------------------
def plan(files: list[Path], base: dict, only_lines: set[tuple[str, int]] | None) -> list[Mutant]:
    durations = base["durations"]
    failed = set(base["failed"])
    everything = [t for t in durations if t not in failed]
    mutants: list[Mutant] = []
    for f in files:
        tree = ast.parse(source_of(f), str(f))
        stmt_span = _statement_spans(tree)
        by_line = base["lines"].get(str(f), {})
        rel = str(f.relative_to(ROOT))
        reach = _reach(f, by_line, everything)
        for cand in candidates(tree):
            if only_lines is not None and (rel, cand.line) not in only_lines:
                continue
            lo, hi = stmt_span.get(cand.line, (cand.line, cand.line))
            contexts: set[str] = set()
            for ln in range(lo, hi + 1):
                contexts.update(by_line.get(str(ln), []))
            tests = sorted((c for c in contexts if c and c not in failed),
                           key=lambda t: durations.get(t, 0.0))
            m = Mutant(rel, cand.index, cand.line, cand.description, cand.owner, tests)
            if "" in contexts or cand.owner is None or "<lambda>" in (cand.owner or ""):
                # Runs while a module is imported (at collection, or in whichever test first
                # imports it): those that execute the line first, then every test that may see
                # its effect (see _reach).
                m.path_kind = "fresh"
                m.tests = tests + sorted((t for t in reach if t not in set(tests)),
                                         key=lambda t: durations.get(t, 0.0))
            elif not tests:
                m.path_kind, m.status = "uncovered", "survived"
            mutants.append(m)
    return mutants


def _reach(path: Path, by_line: dict, everything: list[str]) -> list[str]:
    """The tests a change to `path`'s import-time code (a table, a decorator's argument) can
    reach. If another project module imports names from it, the change can act through code
    elsewhere: every test. Otherwise only through the file's own code or a test module that
    imports it: the tests that execute any of its lines, and every test of those test modules.
    (Running all of them for each such mutant made a complete run of a module whose test map
    includes the ONNX backend cases take hours.)"""
    name = module_name(path)
    parent, stem = name.rsplit(".", 1)
    patterns = (f"from {name} import", f"import {name}", f"from {parent} import {stem}",
                f"{name}.")
    sibling = f"from .{stem} import"
    for src in (ROOT / "converter").rglob("*.py"):
        if src == path:
            continue
        text = src.read_text()
        if any(p in text for p in patterns) or (src.parent == path.parent and sibling in text):
            return list(everything)
    files = set()
    for test in (ROOT / "tests").rglob("*.py"):
        text = test.read_text()
        if any(p in text for p in patterns):
            files.add(str(test.relative_to(ROOT)))
    running = {c for contexts in by_line.values() for c in contexts if c}
    return [t for t in everything if t in running or t.split("::")[0] in files]


def _statement_spans(tree: ast.Module) -> dict[int, tuple[int, int]]:
    """line -> the line span of the innermost simple statement on it (coverage marks a
    multi-line statement on some of its lines only)."""
    spans: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            if isinstance(node, (ast.If, ast.While, ast.For, ast.With, ast.Try,
                                 ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                end = node.lineno
                if isinstance(node, (ast.If, ast.While)):
                    end = node.test.end_lineno or node.lineno
            for ln in range(node.lineno, end + 1):
                cur = spans.get(ln)
                if cur is None or (end - node.lineno) < (cur[1] - cur[0]):
                    spans[ln] = (node.lineno, end)
    return spans


_SOURCES: dict[Path, str] = {}   # read once, before any fork: edits during a run don't leak in


def source_of(path: Path) -> str:
    if path not in _SOURCES:
        _SOURCES[path] = path.read_text()
    return _SOURCES[path]


def mutated_code(path: Path, index: int):
    tree = ast.parse(source_of(path), str(path))
    cands = candidates(tree)
    cands[index].apply()
    ast.fix_missing_locations(tree)
    return compile(tree, str(path), "exec")


# --- the two ways of running one mutant ----------------------------------------------------------
class _MutantFinder:
    """Import hook: serves the mutated code for one module."""

    def __init__(self, name: str, path: Path, code):
        self.name, self.path, self.code = name, path, code

    def find_spec(self, fullname, target_path=None, target=None):
        if fullname != self.name:
            return None
        import importlib.util
        is_pkg = self.path.name == "__init__.py"
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=self,
            submodule_search_locations=[str(self.path.parent)] if is_pkg else None)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = str(self.path)
        exec(self.code, module.__dict__)


def run_fresh(m: Mutant | None, test_paths: list[str], timeout: float,
              order: list[str] | None = None) -> tuple[int, bool]:
    """Fork of a process that has not imported the project: import hook, then pytest (the
    mutant's tests, else `order`, else every test under `test_paths`)."""
    pid = fork_group()
    if pid == 0:
        try:
            silence()
            if m is not None:
                path = ROOT / m.path
                sys.meta_path.insert(0, _MutantFinder(module_name(path), path,
                                                      mutated_code(path, m.index)))
            import pytest
            order = m.tests if (m is not None and m.tests) else order
            paths = sorted({t.split("::")[0] for t in order}) if order else test_paths
            code = pytest.main(_pytest_args(paths, True), plugins=[_Select(order)])
            os._exit(int(code))
        except BaseException:
            os._exit(3)
    return wait_child(pid, timeout)


class _Loop:
    """pytest plugin for the collected session: runs each fast mutant in a fork."""

    def __init__(self, mutants: list[Mutant], timeouts: dict[int, float], jobs: int, report):
        self.mutants, self.timeouts, self.jobs, self.report = mutants, timeouts, jobs, report
        self.functions: dict[tuple[str, str], list] = {}

    def pytest_runtestloop(self, session):
        items = {it.nodeid: it for it in session.items}
        wanted = {str(ROOT / m.path) for m in self.mutants}
        import importlib
        for path in sorted(wanted):  # a module the tests import lazily is not loaded yet
            importlib.import_module(module_name(Path(path)))
        for obj in gc.get_objects():
            code = getattr(obj, "__code__", None)
            if code is not None and type(obj).__name__ == "function" and \
                    code.co_filename in wanted:
                self.functions.setdefault((code.co_filename, code.co_qualname), []).append(obj)
        running: dict[int, tuple[Mutant, float]] = {}
        queue = list(self.mutants)
        while queue or running:
            while queue and len(running) < self.jobs:
                m = queue.pop(0)
                pid = self._start(m, items)
                if pid is None:
                    m.path_kind = "unswappable"   # the caller runs it in a fresh import
                    continue
                running[pid] = (m, time.monotonic())
            for pid, (m, started) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                elapsed = time.monotonic() - started
                if done:
                    code = os.waitstatus_to_exitcode(status)
                    m.status = "survived" if code == 0 else "killed"
                elif elapsed > self.timeouts[id(m)]:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    m.status = "timeout"
                else:
                    continue
                m.seconds = elapsed
                del running[pid]
                self.report(m)
            time.sleep(0.01)
        return True

    def _start(self, m: Mutant, items) -> int | None:
        path = ROOT / m.path
        targets = self.functions.get((str(path), m.owner), [])
        if not targets:
            return None
        pid = os.fork()
        if pid != 0:
            return pid
        try:
            from _pytest.runner import runtestprotocol
            silence()
            module = mutated_code(path, m.index)
            new = find_code(module, m.owner)
            for fn in targets:
                fn.__code__ = new
            # Functions nested in the owner that already exist (a factory called at import,
            # such as `_arg_rule("argMax")`) were made from the old code: swap theirs too.
            nested = m.owner + ".<locals>."
            for (where, qualname), fns in self.functions.items():
                if where == str(path) and qualname.startswith(nested):
                    inner = find_code(module, qualname)
                    for fn in fns if inner is not None else ():
                        fn.__code__ = inner
            chosen = [items[t] for t in m.tests if t in items]
            for i, item in enumerate(chosen):
                nxt = chosen[i + 1] if i + 1 < len(chosen) else None
                reports = runtestprotocol(item, nextitem=nxt, log=False)
                if any(r.failed for r in reports):
                    os._exit(1)
            os._exit(0)
        except BaseException:
            os._exit(3)


# --- equivalents --------------------------------------------------------------------------------
def load_equivalents() -> set[str]:
    """Keys `path: description` from tests/mutation_equivalents.md lines of the form
    - `converter/x.py:123` `` mutation description `` -- why (a description without backticks
    may be in single ones). The line is part of the match: the same mutation text ("`1` ->
    `2`") recurs on many lines, so an edit above an entry means re-checking it."""
    keys: set[str] = set()
    if not EQUIVALENTS.exists():
        return keys
    for line in EQUIVALENTS.read_text().splitlines():
        line = line.strip()
        if not line.startswith("- `"):
            continue
        try:
            where, rest = line[3:].split("`", 1)
            desc = rest.split(" -- ", 1)[0].strip()
            if desc.startswith("`` ") and desc.endswith(" ``"):  # a code span with backticks
                desc = desc[3:-3]
            elif desc.startswith("`") and desc.endswith("`"):
                desc = desc[1:-1]
        except ValueError:
            continue
        keys.add(f"{where}: {desc}")
    return keys


# --- one module ----------------------------------------------------------------------------------
def run_module(name: str, jobs: int, verbose: bool, only_lines=None) -> dict:
    entries, tests = MODULES[name]
    files = source_files(entries)
    test_paths = existing(tests)
    started = time.monotonic()
    base = baseline(files, test_paths)
    if base["code"] not in (0,):
        print(f"  note: baseline pytest exit {base['code']}; failing tests are not used: "
              f"{base['failed'][:5]}")
    mutants = plan(files, base, only_lines)
    durations = base["durations"]
    all_time = sum(durations.values())
    timeouts: dict[int, float] = {}
    for m in mutants:
        t = sum(durations.get(x, 0.0) for x in m.tests) if m.tests else all_time
        timeouts[id(m)] = 20.0 + 4.0 * t

    def report(m: Mutant) -> None:
        if verbose:
            print(f"  {m.status:8} {m.path_kind:6} {m.seconds:5.1f}s {m.key}", flush=True,
                  file=_OUT[0])

    # sanity: the unmutated code passes the way each mutant will be run
    fresh = [m for m in mutants if m.path_kind == "fresh"]
    if fresh:
        # the tests that failed in the baseline (flaky under load) are used by no mutant, so
        # they are left out here too
        usable = [t for t in durations if t not in set(base["failed"])]
        code, _ = run_fresh(None, test_paths, 20 + 4 * all_time,
                            order=usable if base["failed"] else None)
        if code != 0:
            raise SystemExit(f"{name}: unmutated tests fail in a fresh fork (exit {code})")
    for m in fresh:
        t0 = time.monotonic()
        code, timed_out = run_fresh(m, test_paths, timeouts[id(m)])
        m.seconds = time.monotonic() - t0
        m.status = "timeout" if timed_out else ("survived" if code == 0 else "killed")
        report(m)
    fast = [m for m in mutants if m.path_kind == "fast"]
    if fast:
        _sanity_subsets(fast, test_paths)
        results = result_file()
        pid = fork_group()
        if pid == 0:
            import pytest
            loop = _Loop(fast, timeouts, jobs, report)
            devnull = os.open(os.devnull, os.O_WRONLY)
            saved = os.dup(1)
            os.dup2(devnull, 1)
            try:
                _OUT[0] = os.fdopen(saved, "w", buffering=1)  # our own reports still show
                pytest.main(_pytest_args(test_paths, False), plugins=[loop])
            finally:
                Path(results).write_text(json.dumps(
                    [[m.status, m.path_kind, m.seconds] for m in fast]))
                os._exit(0)
        os.waitpid(pid, 0)
        reaped(pid)
        for m, (status, kind, secs) in zip(fast, json.loads(read_result(results))):
            m.status, m.path_kind, m.seconds = status, kind, secs
        for m in fast:
            if m.path_kind == "unswappable":
                m.path_kind = "fresh"
                t0 = time.monotonic()
                code, timed_out = run_fresh(m, test_paths, timeouts[id(m)])
                m.seconds = time.monotonic() - t0
                m.status = "timeout" if timed_out else ("survived" if code == 0 else "killed")
                report(m)
    for m in mutants:
        if m.path_kind == "uncovered":
            report(m)
    equivalents = load_equivalents()
    killed = sum(m.status in ("killed", "timeout") for m in mutants)
    survivors = [m for m in mutants if m.status == "survived"]
    justified = [m for m in survivors if m.key in equivalents]
    total = len(mutants)
    score = 100.0 * killed / total if total else 100.0
    kinds = {k: sum(m.path_kind == k for m in mutants) for k in ("fast", "fresh", "uncovered")}
    print(f"\n== {name}: {total} mutants, {killed} killed, {len(survivors)} survived "
          f"({len(justified)} listed as equivalent) -> score {score:.1f}% "
          f"[{time.monotonic() - started:.0f}s; run in the collected session {kinds['fast']}, "
          f"in a fresh import {kinds['fresh']}, on lines no test runs {kinds['uncovered']}]")
    for m in survivors:
        mark = "  (equivalent)" if m in justified else ""
        print(f"  SURVIVED {m.path}:{m.line}: {m.description}"
              f"{' [no test runs this line]' if m.path_kind == 'uncovered' else ''}{mark}")
    return {"module": name, "mutants": total, "killed": killed, "survived": len(survivors),
            "equivalent": len(justified), "score": round(score, 1),
            "seconds": round(time.monotonic() - started),
            "survivors": [m.key for m in survivors if m not in justified]}


def _sanity_subsets(fast: list[Mutant], test_paths: list[str]) -> None:
    """Unmutated, a few of the test subsets the mutants will run must pass on their own
    (a test that depends on another one having run first would fake kills)."""
    rng = random.Random(0)
    subsets = [m.tests for m in rng.sample(fast, min(3, len(fast)))]
    for tests in subsets:
        probe = Mutant("", 0, 0, "", None, tests)
        code, _ = run_fresh_identity(probe, test_paths)
        if code != 0:
            raise SystemExit(f"unmutated subset fails on its own (exit {code}): {tests[:3]}")


def run_fresh_identity(probe: Mutant, test_paths: list[str]) -> tuple[int, bool]:
    pid = fork_group()
    if pid == 0:
        try:
            silence()
            import pytest
            paths = sorted({t.split("::")[0] for t in probe.tests})
            os._exit(int(pytest.main(_pytest_args(paths, True), plugins=[_Select(probe.tests)])))
        except BaseException:
            os._exit(3)
    return wait_child(pid, 600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="module names or prefixes (default: all)")
    parser.add_argument("--list", action="store_true", help="print the module table")
    parser.add_argument("--jobs", type=int, default=1, choices=(1, 2))
    parser.add_argument("-v", "--verbose", action="store_true", help="print every mutant")
    parser.add_argument("--json", help="also write the per-module results to this file")
    parser.add_argument("--lines", help="only mutants on these lines: path:line,path:line")
    args = parser.parse_args(argv)
    if args.list:
        for name, (entries, tests) in MODULES.items():
            print(f"{name}: converter/{{{', '.join(entries)}}} <- {', '.join(tests)}")
        return 0
    names = [n for n in MODULES if not args.modules or
             any(n == a or n.startswith(a + ".") or n.startswith(a) for a in args.modules)]
    if not names:
        parser.error(f"no module matches {args.modules}; see --list")
    only = None
    if args.lines:
        only = {(p.rsplit(":", 1)[0], int(p.rsplit(":", 1)[1])) for p in args.lines.split(",")}
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    os.nice(10)
    os.chdir(ROOT)
    for mod in HEAVY:   # imported once, shared by every fork
        try:
            __import__(mod)
        except ImportError:
            pass
    results = []
    scratch()   # made here, before any fork: every fork's pytest runs keep their folders in it
    try:
        for n in names:
            results.append(run_module(n, args.jobs, args.verbose, only))
            if args.json:  # after each module: a long run that is stopped keeps its results
                Path(args.json).write_text(json.dumps(results, indent=1))
    finally:
        remove_scratch()
    print("\n| module | mutants | killed | survived (equivalent) | score | time |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['module']} | {r['mutants']} | {r['killed']} | {r['survived']} "
              f"({r['equivalent']}) | {r['score']}% | {r['seconds']}s |")
    return 0 if all(r["score"] >= 90.0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
