"""Chromium runs in its sandbox where it can (converter/runtimes/chromium_sandbox.py), and says
once why not where it cannot. Was: always --no-sandbox, silently.

Each case runs in its own process (the reason is said once a process, the browser is one a
process). This machine's tests run as root, where Chromium refuses its sandbox; the sandboxed
launch is proven by running the browser as another user (uid 65534, through setpriv) from a
world-readable copy, and reading its renderers' seccomp mode in /proc while it runs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from converter.errors import ConverterError
from converter.runtimes.browser_install import ENV_VAR, find_chromium
from converter.runtimes.chromium_sandbox import AS_ROOT

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.webnn"
NOBODY = 65534


def _binary() -> Path:
    try:
        return find_chromium()
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(e.line())


# Runs tiny_cnn in the browser, then reports the user and seccomp mode (2: a filter, the
# sandbox's) of each of its renderers while the browser still runs. argv[1]: "sandbox-possible"
# makes the launcher believe it does not run as root.
_SCRIPT = """
import glob, json, os, sys
import numpy as np
from converter.runtimes import chromium_sandbox
if sys.argv[1] == "sandbox-possible":
    chromium_sandbox.runs_as_root = lambda: False
import converter
from converter.runtimes.chromium import run_chromium
graph = converter.load(sys.argv[2])
[(name, spec)] = [(n, o) for n, o in graph.inputs.items()]
out = run_chromium(graph, {name: np.ones(spec.shape, np.float32)})
procs = {}
for status in glob.glob("/proc/[0-9]*/status"):
    try:
        cmd = open(status[:-6] + "cmdline", "rb").read()
        fields = dict(l.split(":\t", 1) for l in open(status).read().splitlines() if ":\t" in l)
    except OSError:
        continue
    procs[int(fields["Pid"])] = (int(fields["PPid"]), cmd, fields)
def ours(pid):  # a descendant of this process (other runs' browsers may be up too)
    while pid in procs and pid > 1:
        pid = procs[pid][0]
        if pid == os.getpid():
            return True
    return False
modes = [[int(f["Uid"].split()[0]), int(f["Seccomp"])] for pid, (_, cmd, f) in procs.items()
         if ours(pid) and b"--type=renderer" in cmd]
print(json.dumps({"outputs": sorted(out), "renderers": modes}))
"""


def _run(mode: str, env: dict | None = None) -> tuple[dict, list[str]]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(TINY)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: Chromium")]
    return json.loads(done.stdout.strip().splitlines()[-1]), notes


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="runs as root")
def test_as_root_it_runs_unsandboxed_and_says_why_once(tmp_path):
    binary = _binary()
    result, notes = _run("as-is")
    assert result["outputs"] == ["probabilities"]
    assert notes == [f"note: {AS_ROOT}"]
    assert result["renderers"] and all(mode == 0 for _, mode in result["renderers"])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="runs as root")
def test_a_sandbox_chromium_refuses_is_said_with_its_reason_and_the_run_goes_on(tmp_path):
    # As root, Chromium itself refuses the sandboxed launch: its own line is the reason given.
    binary = _binary()
    result, notes = _run("sandbox-possible")
    assert result["outputs"] == ["probabilities"]
    assert notes == ["note: Chromium runs without its sandbox: it could not start sandboxed "
                     "here (Running as root without --no-sandbox is not supported. See "
                     "https://crbug.com/638180.)"]


@pytest.fixture(scope="module")
def as_another_user() -> Path:
    """A copy of the browser that runs as uid 65534: its `chromium` is a script that hands
    Playwright's profile folder to that user and starts the real binary as them. (In a folder
    of its own, not pytest's: that one's parents are closed to other users.)"""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("switching to another user needs root and setpriv")
    binary = _binary()
    top = Path(tempfile.mkdtemp(prefix="webnn-sandbox-test-"))
    try:
        yield _copy_for_another_user(binary, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _copy_for_another_user(binary: Path, top: Path) -> Path:
    top.chmod(0o755)
    folder = top / "chromium"
    shutil.copytree(binary.parent, folder, ignore=shutil.ignore_patterns("node_modules"))
    home = top / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    (folder / "chromium").rename(folder / "chromium.real")
    (folder / "chromium").write_text(
        "#!/bin/sh\n"
        "for a in \"$@\"; do case \"$a\" in --user-data-dir=*)\n"
        f"  chown -R {NOBODY}:{NOBODY} \"${{a#--user-data-dir=}}\";; esac; done\n"
        f"exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups env HOME={home} "
        f"{folder}/chromium.real \"$@\"\n")
    for path in [top, *top.rglob("*")]:
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    (folder / "chromium").chmod(0o755)
    return folder


def test_as_another_user_it_runs_sandboxed_and_says_nothing(as_another_user):
    result, notes = _run("sandbox-possible", env={ENV_VAR: str(as_another_user / "chromium")})
    assert result["outputs"] == ["probabilities"]
    assert notes == []
    assert result["renderers"] and all(uid == NOBODY and mode == 2  # seccomp-bpf: sandboxed
                                       for uid, mode in result["renderers"])
