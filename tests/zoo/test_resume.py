"""A run killed halfway, started again with --resume, finishes without redoing what finished."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from .conftest import ROOT, cli_command, run_cli
from .faults import HOOK

# The first run goes through the library, because only it takes the test hook that makes
# `hang` hang: the kill lands while `hang` runs, after the three models before it finished.
_FIRST_RUN = ("import sys; from converter.zoo import ZooOptions, run_zoo; "
              "run_zoo(sys.argv[1], ZooOptions(jobs=1, timeout=120, hook=%r), "
              "results_path=sys.argv[2])" % HOOK)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _whole_lines(path) -> int:
    """Lines written whole so far (a line being appended has no newline yet)."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_killed_run_resumes_without_redoing_finished_models(synthetic, tmp_path):
    manifest = synthetic(["add", "conv_relu", "matmul_softmax", "hang", "unsupported",
                          "corrupt"])
    results = tmp_path / "results.jsonl"
    first = subprocess.Popen([sys.executable, "-c", _FIRST_RUN, str(manifest), str(results)],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 600  # a bound on waiting, not a measured time
    # Three models done and stored (their lines whole), and `hang` sleeping.
    while not (_whole_lines(results) >= 3 and (tmp_path / "hang.hanging").exists()):
        assert first.poll() is None, f"the first run ended ({first.returncode})"
        assert time.monotonic() < deadline, "`hang` did not start"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    before = _lines(results)
    assert [r["result"]["id"] for r in before] == ["add", "conv_relu", "matmul_softmax"]

    second = run_cli(manifest, "--resume", "--results", results, "--json", "--timeout", "60")
    # without the hook `hang` is a plain Add: it verifies, which is not the timeout its
    # manifest entry expects, so the run exits 1 naming it
    assert second.returncode == 1, second.stderr
    assert second.stderr.strip() == "missed: hang (verified, expected timeout)"
    doc = json.loads(second.stdout)
    assert doc["summary"]["resumed"] == ["add", "conv_relu", "matmul_softmax"]
    after = _lines(results)
    # three old lines kept verbatim, three new ones: nothing finished was run again
    assert after[:3] == before
    assert sorted(r["result"]["id"] for r in after[3:]) == ["corrupt", "hang", "unsupported"]
    by_id = {m["id"]: m for m in doc["models"]}
    assert by_id["add"]["times"] == before[0]["result"]["times"]
    assert by_id["hang"]["status"] == "verified" and by_id["hang"]["meetsExpect"] is False
    assert doc["summary"]["missed"] == ["hang"] and doc["summary"]["regressions"] == []


def test_default_results_go_to_the_cache_not_the_working_directory(synthetic, tmp_path):
    manifest = synthetic(["add", "conv_relu"])
    cache = tmp_path / "cache"
    first_cwd, second_cwd = tmp_path / "a", tmp_path / "b"
    first_cwd.mkdir()
    second_cwd.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WEBNN_CONVERTER_CACHE": str(cache)}
    first = subprocess.run(cli_command(manifest, "--json"), cwd=first_cwd, env=env,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert list(first_cwd.iterdir()) == []
    stored = list((cache / "zoo").glob("*.jsonl"))
    assert len(stored) == 1 and stored[0].name.startswith(manifest.stem + "-")
    assert sorted(r["result"]["id"] for r in _lines(stored[0])) == ["add", "conv_relu"]
    # from another directory, --resume finds the same file and runs nothing again
    second = subprocess.run(cli_command(manifest, "--resume", "--json"), cwd=second_cwd,
                            env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["summary"]["resumed"] == ["add", "conv_relu"]
    assert list(second_cwd.iterdir()) == [] and len(_lines(stored[0])) == 2
