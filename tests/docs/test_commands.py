"""Every command block of README.md and docs/ runs, on the project's fixtures, and prints what
the page shows (tests/docs/blocks.py says how blocks are written, elided and marked not-run)."""
from __future__ import annotations

import os

import pytest

from .blocks import ROOT, BlockError, blocks_of, documented_files, run_command, workspace

# Blocks marked `<!-- not-run: REASON -->`, per file. A new one must be added here on purpose.
NOT_RUN = {
    "README.md": 1,                        # the test command: the whole suite
    "docs/guide/stateful-tflite.md": 2,    # a public wake-word model (network)
    "docs/guide/zoo-in-ci.md": 1,          # the public zoo (network)
    "docs/reference/performance.md": 1,    # benches: minutes, timed
    "docs/reference/testing.md": 1,        # the test command: the whole suite
}

_FILES = [p for p in documented_files() if p.exists()]


def _runnable(path) -> list:
    """The blocks of `path` to run; a malformed page is kept, so that its test fails saying why."""
    try:
        return [b for b in blocks_of(path) if not b.not_run]
    except BlockError:
        return [None]


# The pages with a block to run (a page of prose or only not-run blocks has nothing to test).
_RUN = [p for p in _FILES if _runnable(p)]


def _rel(path) -> str:
    return str(path.relative_to(ROOT))


def _needs_browser(blocks) -> bool:
    return any("--runtime chromium" in c.text or "runtime=\"chromium\"" in c.text
               for b in blocks if not b.not_run for c in b.commands)


def _browser_or_skip() -> None:
    from converter.errors import ConverterError
    from converter.runtimes.browser_install import find_chromium

    try:
        find_chromium()
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(f"no WebNN browser: {e.line()}")


def _params():
    for path in _RUN:
        needs = _needs_browser([b for b in _runnable(path) if b is not None])
        yield pytest.param(path, id=_rel(path), marks=[pytest.mark.browser] if needs else [])


@pytest.mark.parametrize("path", list(_params()))
def test_documented_commands_print_what_the_page_shows(path, tmp_path):
    try:
        blocks = [b for b in blocks_of(path) if not b.not_run]
    except BlockError as e:
        pytest.fail(str(e), pytrace=False)
    if _needs_browser(blocks):
        _browser_or_skip()
    folder = tmp_path / "checkout"
    env = workspace(folder)
    failure = None
    for command in (c for b in blocks for c in b.commands):
        try:
            run_command(command, f"{_rel(path)}:{command.line}", folder, env)
        except BlockError as e:
            failure = str(e)
            break
    if failure:
        pytest.fail(failure, pytrace=False)


def test_not_run_blocks_are_counted_and_give_a_reason():
    counted = {}
    for path in _FILES:
        for block in blocks_of(path):
            if block.not_run:
                assert len(block.not_run) > 10, f"{block.where}: say why it is not run"
                counted[_rel(path)] = counted.get(_rel(path), 0) + 1
    assert counted == NOT_RUN


def test_every_page_with_commands_is_found():
    """The blocks are found at all: a parser that found none would pass every page."""
    runnable = sum(len(b.commands) for p in _FILES for b in blocks_of(p) if not b.not_run)
    assert runnable >= 30, runnable
