"""The CI sample of tools/fuzz.py: every hostile construction of tools/fuzz_corpus.py and
tools/fuzz_surfaces.py plus as many mutated real files, each through its commands (the seven
model commands, or the case's own: zoo, run, verify, serve, convert with options): no internal
error, crash, timeout, memory overrun, leftover file, canary byte, executed code, raw escape,
overwritten input, accepted hostile case or outcome its case's judge finds wrong."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import fuzz  # noqa: E402
from fuzz_corpus import CANARY, HOSTILE, make_corpus  # noqa: E402
from fuzz_surfaces import MARKER  # noqa: E402


def test_the_sample_has_no_failure_of_any_kind(tmp_path):
    count = 2 * len(HOSTILE)  # the hostile cases take every other slot until they run out
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "fuzz.py"), "--seed", "0",
                           "--count", str(count), "--jobs", "2", "--out", str(tmp_path / "f")],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    values = dict(zip(header, (int(c) for c in rows[1].strip("|").split("|"))))
    failures = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    cases = make_corpus(tmp_path / "again", 0, count)  # the same corpus: the same seed
    assert values["runs"] == sum(len(c.commands or fuzz.COMMANDS) for c in cases)
    assert sum(c.commands is not None for c in cases) >= 20  # zoo, run, verify, writes over
    assert {k: values[k] for k in fuzz.KINDS} == dict.fromkeys(fuzz.KINDS, 0), \
        "\n".join(failures[:40])
    assert proc.returncode == 0
    # Both outcomes occur: the sample is not all rejections, nor all passes.
    assert values["clean errors"] > 100 and values["successes"] > 50
    assert values["clean errors"] + values["successes"] == values["runs"]
    assert re.search(r"slowest run \d+\.\d s \(limit 30 s\)", proc.stdout)
    assert len(re.findall(r"^ +\d+\.\d\d s  exit ", proc.stdout, re.M)) == fuzz.SLOWEST


def test_the_summary_lists_the_slowest_runs_by_wall_time():
    runs = [fuzz.Run(f"case{i}", "check", exit=2, seconds=s, detail=f"error {i}")
            for i, s in enumerate([0.1, 7.25, 0.3, 2.0, 0.05, 3.5, 0.2])]
    text = fuzz.table(fuzz.summary(runs), runs)
    listed = text.splitlines()[text.splitlines().index("the 5 slowest runs:") + 1:]
    assert listed == ["     7.25 s  exit 2  case1 check: error 1",
                      "     3.50 s  exit 2  case5 check: error 5",
                      "     2.00 s  exit 2  case3 check: error 3",
                      "     0.30 s  exit 2  case2 check: error 2",
                      "     0.20 s  exit 2  case6 check: error 6"]
    assert "slowest run 7.2 s (limit 30 s)" in text


def _judged(tmp_path, files: dict[str, bytes], *, exit_code: int, maxrss_kb: int = 50_000,
            stderr: bytes = b"", stdout: bytes = b"", must_refuse: bool = False,
            corpus_change=None, check=None, outcome=None) -> list[str]:
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    model = corpus / "case"
    model.mkdir(parents=True)
    (model / "m.onnx").write_bytes(b"model")
    out.mkdir()
    (out / "stdout.txt").write_bytes(stdout)
    (out / "stderr.txt").write_bytes(stderr)
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    before = fuzz._stamps(corpus)
    if corpus_change:
        corpus_change(corpus)
    run = fuzz.Run("case", "convert.webnn")
    case = fuzz.Case("case", model, model / "m.onnx", must_refuse=must_refuse, check=check,
                     outcome=outcome)
    status = exit_code << 8  # as wait4 reports a normal exit
    fuzz._judge(run, case, out, ["o.webnn", "r.md"], before, corpus, status,
                types.SimpleNamespace(ru_maxrss=maxrss_kb))
    return run.failures


def _rewrite(corpus: Path) -> None:
    path = corpus / "case" / "m.onnx"
    path.write_bytes(b"other")
    os.utime(path, ns=(0, 0))


def test_the_judge_sees_each_kind_of_failure(tmp_path):
    """The sample above passes only because nothing fails, not because nothing is looked at."""
    assert _judged(tmp_path / "a", {"o.webnn": b"ok"}, exit_code=0) == []
    assert _judged(tmp_path / "b", {".o.weights.1234.tmp": b""}, exit_code=2) == ["leftover"]
    assert _judged(tmp_path / "c", {"o.webnn": b"x"}, exit_code=2) == ["leftover"]
    assert _judged(tmp_path / "d", {"o.webnn": CANARY}, exit_code=0) == ["canary"]
    listed = ", ".join(str(b) for b in CANARY[8:24]).encode()
    assert _judged(tmp_path / "e", {"o.webnn": b"[" + listed + b"]"}, exit_code=0) == ["canary"]
    assert _judged(tmp_path / "f", {}, exit_code=2,
                   stderr=b"internal error: KeyError: 11; rerun with --debug") == ["internal"]
    assert _judged(tmp_path / "g", {}, exit_code=2, maxrss_kb=2_000_000) == ["memory"]
    assert _judged(tmp_path / "h", {}, exit_code=120) == ["crash"]
    # issue 26: what a run leaves in its TMPDIR or anywhere in the corpus, a build backend's
    # marker, the terminal, a Markdown report, a file read and then written, a success where
    # only a refusal is safe, and an output written over another
    assert _judged(tmp_path / "i", {"tmp/.ses": b""}, exit_code=2) == ["leftover"]
    assert _judged(tmp_path / "j", {}, exit_code=2, corpus_change=lambda c: (
        c / "outside").mkdir()) == ["leftover"]
    assert _judged(tmp_path / "k", {}, exit_code=2, corpus_change=lambda c: (
        c / "case" / MARKER).write_text("ran")) == ["leftover", "executes"]
    for i, raw in enumerate(("\x1b]52;c;QQ==\x07", "\x1b[2J", "\r", "\x9b", "\u202e", "\u2028",
                             "\x00", "\x7f")):
        assert _judged(tmp_path / f"l{i}", {}, exit_code=2,
                       stderr=f"error: node 'n{raw}'".encode()) == ["escape"], repr(raw)
    assert _judged(tmp_path / "m", {}, exit_code=2,
                   stdout=b"node 'x\nFORGED: verified'") == ["escape"]
    assert _judged(tmp_path / "n", {}, exit_code=2, stdout=b"a\tb\nc\n") == []
    for i, md in enumerate((b"| <script>x</script> |", b"<IMG src=x>", b"[a](javascript:x)",
                            b"`\x1b[2J`")):
        assert _judged(tmp_path / f"o{i}", {"r.md": md}, exit_code=0) == ["escape"], md
    assert _judged(tmp_path / "p", {"r.md": b"| `&lt;script&gt;` |\n"}, exit_code=0) == []
    assert _judged(tmp_path / "q", {}, exit_code=2, corpus_change=_rewrite) == ["overwrote"]
    assert _judged(tmp_path / "r", {"o.webnn": b"ok"}, exit_code=0,
                   must_refuse=True) == ["accepted"]
    assert _judged(tmp_path / "s", {"o.webnn": b"ok"}, exit_code=0,
                   check=lambda out: "1 .npy file for 2 outputs") == ["overwrote"]
    # a case's own judge of any outcome, a refusal too (serve's cache, one error line)
    assert _judged(tmp_path / "t", {}, exit_code=2,
                   outcome=lambda out, code: f"exit {code}" * (code != 1)) == ["outcome"]
    assert _judged(tmp_path / "u", {}, exit_code=1,
                   outcome=lambda out, code: f"exit {code}" * (code != 1)) == []


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_judge_imports_emitted_modules_in_node(tmp_path):
    # What the emitter wrote before issue 10: a U+2028 in a graph name ends the comment.
    bad = "// WebNN graph 'g\u2028globalThis.CANARY=1;//', written by webnn-converter.\n"
    good = "// WebNN graph \"g\\u2028globalThis.CANARY=1;//\", written by webnn-converter.\n"
    for name, text, want in (("bad", bad, ["executes"]), ("good", good, [])):
        run = fuzz.Run("case", "convert.js")
        out, model = tmp_path / name, tmp_path / f"{name}-model"
        out.mkdir()
        model.mkdir()
        (out / "stdout.txt").write_bytes(b"")
        (out / "stderr.txt").write_bytes(b"")
        (out / "o.js").write_text(text + "export const x = 1;\n", encoding="utf-8")
        fuzz._judge(run, fuzz.Case("case", model, model / "m.onnx"), out, ["o.js"], {}, model,
                    0, types.SimpleNamespace(ru_maxrss=1000))
        assert run.failures == want, (name, run.detail)
