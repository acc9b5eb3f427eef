"""A fixture that bounds a test's address space: tests of files asking for gigabytes use it, so
that should a bound regress (mutation testing removes them one by one) the test fails at once
on a MemoryError instead of the machine giving the file what it asks for."""
from __future__ import annotations

import resource
from pathlib import Path

import pytest

ROOM = 4 << 30  # address space a test may add to what the process has mapped already


def _mapped_bytes() -> int | None:
    status = Path("/proc/self/status")
    if not status.exists():
        return None
    for line in status.read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return None


@pytest.fixture
def address_space_bounded():
    mapped = _mapped_bytes()
    if mapped is None:  # not Linux: no bound, the tests still assert their messages
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + ROOM if hard == resource.RLIM_INFINITY else min(mapped + ROOM, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# -- the CLI in a child whose memory is bounded --------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
# The child's private writable memory (RLIMIT_DATA: what numpy and Python allocate; a file's
# read-only mapping does not count, so a sparse 200 GB model can still be mapped). Converting a
# small model fits in a quarter of it.
CHILD_DATA = 1 << 30
GUARD = 120  # seconds: a bound on waiting for the child (old code took days), never a timing


def refusal(*args: str) -> str:
    """Run `webnn-convert ARGS` in a child with bounded memory; assert it refuses with exit
    code 2, one line on stderr and no traceback, and return that line."""
    import os
    import subprocess
    import sys

    def bound():
        resource.setrlimit(resource.RLIMIT_DATA, (CHILD_DATA, CHILD_DATA))

    try:
        done = subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True,
                              text=True, cwd=ROOT, timeout=GUARD, preexec_fn=bound,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail(f"webnn-convert {' '.join(args)} was still running after {GUARD} s")
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]
