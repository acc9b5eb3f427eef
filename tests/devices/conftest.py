"""Shared by the device tests that drive real pages: the chromium runtime's own browser."""
from __future__ import annotations

import os

import pytest

from converter.errors import ConverterError


@pytest.fixture(scope="module")
def browser():
    """The chromium runtime's own browser (the one `--runtime chromium` uses here), and the
    opSupportLimits() it reports."""
    from converter.runtimes import chromium

    try:
        limits = chromium.op_support_limits()
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(f"no WebNN browser: {e.line()}")
    return chromium._session().browser, limits
