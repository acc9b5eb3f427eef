"""Fuzz the CLI with hostile and damaged model files (issue 10).

    python tools/fuzz.py [--seed 0] [--count 200] [--jobs 2] [--out DIR] [--spawn] [--only GLOB]
                         [--no-mutations]

Writes the corpus of tools/fuzz_corpus.py (deterministic for a seed) and runs every command on
every case: `validate`, `inspect`, `check`, and `convert -o` to .webnn, .js, .onnx and .tflite.
Each run is its own process, with a 30 s timeout (then its process group is killed) and a data
limit of 1 GiB (RLIMIT_DATA). By default a run is a fork of this process, which has imported the
converter already (a run then costs tens of milliseconds, not a second of imports); `--spawn`
execs a fresh `python -m cli.main` instead, exactly what a user runs (but for a run whose
arguments hold a NUL, which no exec passes: it calls main(argv) even then).

A run fails, by kind, when:
  internal   its output has "internal error" or a Python traceback;
  crash      it died of a signal or exited with a code other than 0, 1 and 2;
  timeout    it ran over 30 s;
  memory     its peak RSS passed 1 GiB, or it ran out of memory;
  leftover   after a failure any file remains in its output folder, after a success anything
             but the outputs it names, or a file appeared in the model's folder;
  canary     an output (or its stdout) holds bytes of the canary file placed outside every
             model's folder;
  executes   an emitted .js module, imported in Node (when `node` is installed), sets the
             global the corpus's hostile names try to set, or does not parse; or the marker
             that only a hostile build backend writes (a manifest run through pip) appeared;
  escape     its terminal output holds a raw control character (other than newline and tab),
             a C1 control, a bidi override or line separator, or a line a model string forged;
             or a Markdown report it wrote holds raw markup or control characters;
  overwrote  a file of the corpus (a model, its data, a manifest) changed in place, or a check
             of the case's outputs found one output written over another;
  accepted   a case whose only safe outcome is a refusal exited 0;
  outcome    the case's own judge of any run (its exit code, its one error line, what it left
             in its cache folder, what its outputs compute) found it wrong.
Each run gets its own TMPDIR and cache folder (WEBNN_CONVERTER_CACHE) inside its run folder;
pip reaches no index (PIP_NO_INDEX), so a download the corpus provokes can only fail. Anything
left in the TMPDIR, or any file new anywhere in the corpus, counts as a leftover.
Prints a summary table (runs, clean errors, successes, each failure kind) and the five slowest
runs by wall time (a clean refusal that takes seconds is still a finding), writes every run
(with its wall time `seconds` and peak RSS `peak_mb`) to DIR/runs.jsonl, and exits 1 when any
run failed.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import resource
import shutil
import signal
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

from fuzz_corpus import TOKEN, Case, make_corpus  # noqa: E402
from fuzz_surfaces import MARKER  # noqa: E402

TIMEOUT = 30.0
MEMORY = 1 << 30
SLOWEST = 5  # runs the summary lists by wall time
KINDS = ("internal", "crash", "timeout", "memory", "leftover", "canary", "executes", "escape",
         "overwrote", "accepted", "outcome")
# command name -> (arguments after the entry file, outputs it may leave on success)
COMMANDS = {
    "validate": ([], []),
    "inspect": ([], []),
    "check": ([], []),
    "convert.webnn": (["-o", "{out}/o.webnn"], ["o.webnn", "o.manifest.json", "o.weights"]),
    "convert.js": (["-o", "{out}/o.js"], ["o.js", "o.html", "o.manifest.json", "o.weights"]),
    "convert.onnx": (["-o", "{out}/o.onnx"], ["o.onnx"]),
    "convert.tflite": (["-o", "{out}/o.tflite"], ["o.tflite"]),
}
# The canary's bytes as they would look copied raw, or as a JSON/.webnn byte list.
_NEEDLES = (TOKEN[:24], ", ".join(str(b) for b in TOKEN[:16]).encode(),
            ",".join(str(b) for b in TOKEN[:16]).encode())


@dataclass
class Run:
    case: str
    command: str
    exit: int | None = None
    seconds: float = 0.0
    peak_mb: float = 0.0
    failures: list[str] = field(default_factory=list)
    detail: str = ""


# What must never reach a terminal raw: C0 controls but tab and newline, DEL, C1 controls, the
# bidi embeddings, overrides and isolates, and the line and paragraph separators.
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e"
                          "\u2066-\u2069]")
_FORGED = re.compile(r"^FORGED", re.M)  # fuzz_surfaces.TERMINAL tries to start a line so
_MARKUP = re.compile(r"<script|<img|\]\(javascript:", re.I)


def _listing(folder: Path) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = os.path.relpath(dirpath, folder)
        found.update(os.path.normpath(os.path.join(rel, n)) for n in filenames + dirnames)
    return found


def _stamps(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `folder` (links not followed): a file with its inode, size and mtime,
    a folder with its inode alone (a new entry in it shows as a new path)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames:
            path = os.path.join(dirpath, name)
            found[os.path.relpath(path, folder)] = (os.lstat(path).st_ino, 0, 0)
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            found[os.path.relpath(path, folder)] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def _matches(name: str, allowed: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)


def _child(argv: list[str], out: Path, cwd: Path, spawn: bool) -> None:
    """In the forked child: limits, redirections, then the CLI (never returns)."""
    code = 120
    try:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_DATA, (MEMORY, MEMORY))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(os.open(out / "stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
        os.dup2(os.open(out / "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
        os.chdir(cwd)  # corpus/outside: `../canary.bin` resolved against the working directory
        # instead of the model's folder finds the canary
        (out / "tmp").mkdir()
        os.environ.update(TMPDIR=str(out / "tmp"), WEBNN_CONVERTER_CACHE=str(out / "cache"),
                          PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        tempfile.tempdir = None  # the parent may have cached its own
        # No exec passes a NUL in an argument (a fuzz_numbers case holds one): main(argv) does.
        if spawn and not any("\0" in a for a in argv):
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            os.execve(sys.executable, [sys.executable, "-m", "cli.main", *argv], env)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        from cli.main import main

        try:
            main(argv, prog_name="webnn-convert", standalone_mode=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported through stderr, as the CLI would
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _judge(run: Run, case: Case, out: Path, allowed: list[str],
           before: dict[str, tuple[int, int, int]], corpus: Path, status: int, rusage
           ) -> dict[str, tuple[int, int, int]]:
    """Add the run's failures to `run`; return the corpus's stamps as the run left it."""
    stdout = (out / "stdout.txt").read_bytes()
    stderr = (out / "stderr.txt").read_bytes()
    text = (stdout + stderr).decode("utf-8", "replace")
    run.peak_mb = rusage.ru_maxrss / 1024
    run.detail = stderr.decode("utf-8", "replace").strip().splitlines()[-1][:300] \
        if stderr.strip() else ""
    if os.WIFSIGNALED(status):
        run.exit = -os.WTERMSIG(status)
        if "timeout" not in run.failures:
            run.failures.append("crash")
    else:
        run.exit = os.WEXITSTATUS(status)
        if run.exit not in (0, 1, 2):
            run.failures.append("crash")
    if "internal error" in text or "Traceback (most recent call last)" in text:
        run.failures.append("internal")
    if rusage.ru_maxrss * 1024 > MEMORY or "MemoryError" in text or \
            "Cannot allocate memory" in text or "out of memory" in text.lower():
        run.failures.append("memory")
    written = {n for n in _listing(out) - {"stdout.txt", "stderr.txt"}
               if n.split("/")[0] not in ("tmp", "cache")}
    # A zoo whose models missed their expectation exits 1 with its reports written: outputs.
    finished = run.exit == 0 or (run.exit == 1 and run.command.split(".")[0] == "zoo")
    extra = {n for n in written if not finished or not _matches(n, allowed)}
    left_in_tmp = _listing(out / "tmp") if (out / "tmp").is_dir() else set()
    after = _stamps(corpus)
    appeared = set(after) - set(before)
    changed = sorted(n for n in set(after) & set(before) if after[n] != before[n])
    if extra or appeared or left_in_tmp:
        run.failures.append("leftover")
        shown = sorted(extra | appeared) + [f"TMPDIR/{n}" for n in sorted(left_in_tmp)]
        run.detail = f"left {shown[:5]}; " + run.detail
    blobs = [stdout, stderr] + [(out / name).read_bytes() for name in written
                                if (out / name).is_file() and not (out / name).is_symlink()]
    if any(needle in blob for blob in blobs for needle in _NEEDLES):
        run.failures.append("canary")
    if any(Path(n).name == MARKER for n in appeared):
        run.failures.append("executes")
        run.detail = "a build backend ran; " + run.detail
    if run.exit == 0 and "o.js" in written and shutil.which("node"):
        problem = _imports_cleanly(out / "o.js")
        if problem:
            run.failures.append("executes")
            run.detail = f"{problem}; " + run.detail
    reports = [n for n in written if n.endswith(".md") and (out / n).is_file()]
    if _RAW_CONTROL.search(text) or _FORGED.search(text) or any(
            _MARKUP.search(t) or _RAW_CONTROL.search(t.replace("\n", "").replace("\t", ""))
            for t in ((out / n).read_text("utf-8", "replace") for n in reports)):
        run.failures.append("escape")
    if changed:
        run.failures.append("overwrote")
        run.detail = f"changed {changed[:5]}; " + run.detail
    if run.exit == 0 and case.must_refuse:
        run.failures.append("accepted")
    if run.exit == 0 and case.check is not None:
        problem = case.check(out)
        if problem:
            run.failures.append("overwrote")
            run.detail = f"{problem}; " + run.detail
    if case.outcome is not None and "timeout" not in run.failures:
        problem = case.outcome(out, run.exit)
        if problem:
            run.failures.append("outcome")
            run.detail = f"{problem}; " + run.detail
    return after


def _imports_cleanly(module: Path) -> str | None:
    """Import the module in Node; why it is not clean (a name ran as code), or None."""
    copy = module.with_name("o.fuzz.mjs")
    copy.write_bytes(module.read_bytes())
    try:
        done = subprocess.run(
            ["node", "--input-type=module", "-e",
             f"await import({json.dumps(copy.as_uri())}); "
             "if (globalThis.CANARY !== undefined) { console.log('CANARY SET'); process.exit(3) }"],
            capture_output=True, text=True, timeout=TIMEOUT)
    finally:
        copy.unlink()
    if done.returncode != 0:
        return f"node: {(done.stdout + done.stderr).strip().splitlines()[-1][:200]}"
    return None


def fuzz(out: Path, seed: int, count: int, jobs: int, spawn: bool,
         log=print, only: str | None = None, mutations: bool = True) -> list[Run]:
    cases = make_corpus(out / "corpus", seed, count, only, mutations)
    # Imported now, once, so that every forked run starts with them (and runs in milliseconds).
    import cli.main  # noqa: F401
    import converter.emit.javascript  # noqa: F401
    import converter.exporters.tflite  # noqa: F401
    import converter.importers.onnx  # noqa: F401
    import converter.importers.tflite  # noqa: F401
    import converter.lowering.onnx  # noqa: F401
    import converter.targets.pipeline  # noqa: F401

    work = [(case, command) for case in cases for command in (case.commands or COMMANDS)]
    corpus = out / "corpus"
    runs: list[Run] = []
    running: dict[int, tuple[Run, Case, Path, list[str], float]] = {}
    # The corpus as the last judged run left it: each change is blamed on one run, the first to
    # end after it (with several at a time, possibly a neighbour of the run that made it).
    last = _stamps(corpus)
    log(f"{len(cases)} cases, {len(work)} runs, {jobs} at a time")
    sys.stdout.flush()
    sys.stderr.flush()
    while work or running:
        while work and len(running) < jobs:
            case, command = work.pop(0)
            run_dir = out / "runs" / case.name / command
            run_dir.mkdir(parents=True)
            extra, allowed = (case.commands or COMMANDS)[command]
            argv = [command.split(".")[0], *([str(case.entry)] if case.entry_arg else []),
                    *[a.format(out=run_dir, case=case.folder) for a in extra]]
            pid = os.fork()
            if pid == 0:
                _child(argv, run_dir, corpus / "outside", spawn)
            running[pid] = (Run(case.name, command), case, run_dir, allowed, time.monotonic())
        pid, status, rusage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (run, case, *_, start) in running.items():
                if now - start > (case.timeout or TIMEOUT) and "timeout" not in run.failures:
                    run.failures.append("timeout")
                    os.killpg(child, signal.SIGKILL)
            time.sleep(0.002)
            continue
        run, case, run_dir, allowed, start = running.pop(pid)
        run.seconds = round(time.monotonic() - start, 3)
        last = _judge(run, case, run_dir, allowed, last, corpus, status, rusage)
        runs.append(run)
        if run.failures:
            log(f"FAIL {','.join(run.failures)}: {run.case} {run.command}: {run.detail}")
    with open(out / "runs.jsonl", "w", encoding="utf-8") as f:
        for run in runs:
            f.write(json.dumps(asdict(run), ensure_ascii=False) + "\n")
    return runs


def summary(runs: list[Run]) -> dict[str, int]:
    clean = [r for r in runs if not r.failures]
    counts = {"runs": len(runs), "clean errors": sum(r.exit != 0 for r in clean),
              "successes": sum(r.exit == 0 for r in clean)}
    counts.update({kind: sum(kind in r.failures for r in runs) for kind in KINDS})
    return counts


def table(counts: dict[str, int], runs: list[Run]) -> str:
    """The counts as a markdown table, the slowest run and highest peak, then the SLOWEST
    runs by wall time: a refusal that takes seconds is a finding even when it is clean."""
    slowest = max((r.seconds for r in runs), default=0.0)
    peak = max((r.peak_mb for r in runs), default=0.0)
    head = " | ".join(counts)
    lines = [f"| {head} |", "|" + "---|" * len(counts),
             "| " + " | ".join(str(v) for v in counts.values()) + " |",
             f"slowest run {slowest:.1f} s (limit {TIMEOUT:.0f} s), highest peak RSS "
             f"{peak:.0f} MB (limit {MEMORY >> 20} MB)"]
    ranked = sorted(runs, key=lambda r: r.seconds, reverse=True)[:SLOWEST]
    if ranked:
        lines.append(f"the {len(ranked)} slowest runs:")
    lines += [f"  {r.seconds:7.2f} s  exit {r.exit}  {r.case} {r.command}: {r.detail[:120]}"
              for r in ranked]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200, help="corpus cases to generate")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--spawn", action="store_true",
                        help="run a fresh interpreter per run instead of a fork")
    parser.add_argument("--only", metavar="GLOB",
                        help="only the constructions whose kind matches, e.g. 'tls-*' (the "
                             "mutated real files still fill every other slot)")
    parser.add_argument("--no-mutations", dest="mutations", action="store_false",
                        help="the constructions alone, no mutated real files between them")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="webnn-fuzz-"))
    elif args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = fuzz(args.out, args.seed, args.count, args.jobs, args.spawn, only=args.only,
                mutations=args.mutations)
    counts = summary(runs)
    print(table(counts, runs))
    print(f"runs: {args.out / 'runs.jsonl'}")
    return 1 if any(counts[k] for k in KINDS) else 0


if __name__ == "__main__":
    sys.exit(main())
