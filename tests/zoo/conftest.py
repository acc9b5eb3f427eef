"""Shared pieces of the zoo tests: the synthetic models, and the CLI run as a real process."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `zoo` runs as the `webnn-convert` script runs it (cli.script.run, with its quick exit).
_CLI = "from cli.script import run; run()"


def _synthetic():
    spec = importlib.util.spec_from_file_location("make_synthetic",
                                                  ROOT / "models" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_synthetic = _synthetic()


@pytest.fixture
def synthetic(tmp_path):
    """A function writing the synthetic models and a manifest of `ids` into tmp_path."""
    def write(ids=None):
        return make_synthetic.write_manifest(tmp_path, ids)
    return write


def cli_command(*args) -> list[str]:
    return [sys.executable, "-c", _CLI, "zoo", *map(str, args)]


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cli_command(*args), cwd=cwd or ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def pytest_configure(config):
    config.addinivalue_line("markers", "ray: needs Ray (`pip install 'webnn-converter[ray]'`); "
                                       "starts a local cluster")
