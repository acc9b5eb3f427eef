"""A real browser opens the page of `serve` over https: headless Chromium, its context told to
proceed past the self-signed certificate (`ignore_https_errors`, standing in for a user who
accepts it once), registers with a WebNN context, so `navigator.ml` exists there; verify on
it gives local Chromium's verdict. Over the LAN address too, where plain http gives a page
no WebNN at all (test_devices_in_chromium.py's last test)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.devices import client

from .serving import Served

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"


def _cli(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _open(browser, url: str, name: str):  # noqa: F811
    """A page of a context that proceeds past the certificate, registered as `name`; what
    it says of WebNN."""
    context = browser[0].new_context(ignore_https_errors=True, bypass_csp=True)
    page = context.new_page()
    page.goto(f"{url}?name={name}")
    page.locator("#status", has_text="ready").wait_for(timeout=120_000)
    # (bypass_csp: the page's policy allows no script but its own, and this looks at it)
    seen = page.evaluate("() => ({secure: window.isSecureContext, ml: 'ml' in navigator, "
                         "scheme: location.protocol})")
    return context, page, seen


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_a_page_over_https_has_webnn(browser, tmp_path, monkeypatch, host):  # noqa: F811
    from cli.commands.serve import _shown_host

    if host == "0.0.0.0" and _shown_host(host) == "127.0.0.1":
        pytest.skip("this machine has no network address but loopback")
    # 127.0.0.1 asks for https; off loopback it is the default
    server = Served(tmp_path, "--no-qr", "--host", host, *(["--tls"] if host == "127.0.0.1"
                                                            else []))
    context = None
    try:
        assert server.url.startswith(f"https://{_shown_host(host)}:")
        context, page, seen = _open(browser, server.url, "secure")
        assert seen == {"secure": True, "ml": True, "scheme": "https:"}
        assert page.text_content("#status").startswith("ready (cpu")  # contexts it got
        line = server.wait_for("device 'secure'")
        assert line.startswith("device 'secure': HeadlessChrome 153 on Linux; deviceTypes cpu")
        assert line.endswith("; registered") and "secure context" not in line
        monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(server.cache))
        client.use_server(None)  # the record: the loopback URL, pinned to the certificate
        on_device = _cli("verify", TINY, "--runtime", "device:secure", "--json",
                         "--oracle", "always")
        local = _cli("verify", TINY, "--runtime", "chromium", "--json", "--oracle", "always")
        assert on_device.exit_code == 0 and local.exit_code == 0, \
            on_device.output + local.output
        mine, theirs = json.loads(on_device.output), json.loads(local.output)
        assert mine["graphRuntime"] == \
            "device 'secure' (HeadlessChrome 153 on Linux, deviceType cpu)"
        assert mine["passed"] and theirs["passed"] and mine["oracle"] == theirs["oracle"]
        assert mine["outputs"] == theirs["outputs"]  # one browser build: the same numbers
        # and by the address the page was opened at, its pin given with it
        client.use_server(f"{server.url}#sha256={server.fingerprint}")
        assert [d["name"] for d in client.devices()] == ["secure"]
    finally:
        client.use_server(None)
        if context is not None:
            context.close()
        server.stop()


def test_a_browser_that_does_not_accept_the_certificate_gets_no_page(browser, tmp_path):  # noqa: F811,E501
    server = Served(tmp_path, "--no-qr", "--tls")
    context = browser[0].new_context()  # no user has accepted the certificate here
    try:
        page = context.new_page()
        with pytest.raises(Exception, match="ERR_CERT_AUTHORITY_INVALID"):
            page.goto(server.url)
    finally:
        context.close()
        server.stop()
