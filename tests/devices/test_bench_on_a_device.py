"""bench/bench_browser.py --runtime device:NAME, in its smallest run (tiny_cnn, one timed run):
a table of its own for the device, headed by its name, browser, platform and deviceType, with
our module's outputs as ONNX Runtime's (no time is asserted)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.browser
def test_the_bench_prints_a_table_for_the_device(alpha):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_browser.py"),
                           "--runtime", "device:alpha", "--models", "tiny_cnn", "--runs", "1",
                           "--warmup", "0", "--server", alpha.url],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line]
    assert lines[0] == "### device 'alpha': HeadlessChrome 153 on Linux, deviceType cpu"
    assert lines[1].startswith("| model | ours ms | ours build ms |")
    cells = [cell.strip() for cell in lines[3].strip("|").split("|")]
    assert cells[0] == "tiny_cnn" and float(cells[1]) >= 0 and float(cells[2]) >= 0
    assert float(cells[3]) < 1e-5  # the device's outputs are ONNX Runtime's
    assert cells[4].startswith("not run:")
    assert len(lines) == 4  # no local chromium table: only the device was asked for
    assert alpha.wait_for("sent to device 'alpha' (cpu)")
