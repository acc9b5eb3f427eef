"""Fixtures of the device tests that use a real page: the chromium runtime's browser (with the
opSupportLimits() it reports), and a server with one page of it registered as alpha."""
from __future__ import annotations

import os

import pytest

from converter.devices import client
from converter.errors import ConverterError

from .serving import Served


@pytest.fixture(scope="module")
def browser():
    """(the chromium runtime's own browser, the one `--runtime chromium` uses here; the
    opSupportLimits() it reports)."""
    from converter.runtimes import chromium

    try:
        limits = chromium.op_support_limits()
    except ConverterError as e:
        if os.environ.get("CI"):
            pytest.fail(f"the browser must run in CI: {e.line()}")
        pytest.skip(f"no WebNN browser: {e.line()}")
    return chromium._session().browser, limits


@pytest.fixture(scope="module")
def chromium_browser(browser):
    """The chromium runtime's own browser alone."""
    return browser[0]


@pytest.fixture(scope="module")
def alpha(chromium_browser, tmp_path_factory):
    """A server and one page registered on it as alpha; the client talks to that server."""
    server = Served(tmp_path_factory.mktemp("cache"), "--no-qr")
    page = None
    try:
        page = chromium_browser.new_page()
        page.goto(f"{server.url}?name=alpha")
        page.locator("#status", has_text="ready").wait_for(timeout=120_000)
        client.use_server(server.url)
        yield server
    finally:
        client.use_server(None)
        if page is not None:
            page.close()
        server.stop()
