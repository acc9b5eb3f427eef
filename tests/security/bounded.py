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
