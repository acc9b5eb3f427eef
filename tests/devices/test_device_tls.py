"""`webnn-convert serve` over https, without a browser: the certificate it makes, keeps and
prints the fingerprint of, the clients pinning it, the token and upload bounds over TLS, https
by default off loopback, and hostile --cert/--key paths (tests/devices/test_tls_in_chromium.py
opens the page in a real browser)."""
from __future__ import annotations

import datetime
import json
import os
import ssl
import stat
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import converter
from cli.main import main
from converter.devices import client, tls
from converter.devices.protocol import pack

from .serving import FakeDevice, Served, listening, registration

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"
_WRONG = ":".join(["AB"] * 32)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("cache"), "--tls", "--max-upload-mb", "1")
    yield server
    server.stop()


@pytest.fixture
def use_it(served, monkeypatch):
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(served.cache))
    client.use_server(None)  # the record serve wrote, with its fingerprint
    yield served
    client.use_server(None)


def _presented(url: str) -> str:
    """The SHA-256 fingerprint of the certificate the server at `url` presents."""
    host, port = url.split("/")[2].rsplit(":", 1)
    pem = ssl.get_server_certificate((host.strip("[]"), int(port)), timeout=60)
    return tls.fingerprint(ssl.PEM_cert_to_DER_cert(pem))


def _https(url: str, body: bytes | None = None) -> tuple[int, str]:
    """A request over TLS that trusts anything: what a hostile client (or curl -k) does."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPSHandler(context=context))
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    try:
        with opener.open(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _cli(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _one_line(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_the_url_then_the_fingerprint_then_the_qr_code(tmp_path):
    server = Served(tmp_path, "--tls")
    try:
        assert server.url.startswith("https://127.0.0.1:") and server.url.endswith("/")
        assert server.second == f"certificate SHA-256 fingerprint: {server.fingerprint}"
        assert server.fingerprint == _presented(server.url)  # what a browser shows
        qr = server.lines[:server.lines.index(next(l for l in server.lines
                                                   if l.startswith("certificate: ")))]
        assert len(qr) >= 14 and all(set(line) <= set(" █▀▄") for line in qr if line)
        folder = tmp_path / "devices" / "tls"
        assert server.wait_for("certificate: ") == (
            f"certificate: self-signed, kept in {folder}, for 127.0.0.1, ::1, localhost, valid "
            f"until {tls.self_signed(folder, []).until:%Y-%m-%d}, made now; accept it once on "
            f"each device")
        record = json.loads((tmp_path / "devices" / "server.json").read_text())
        assert record == {"url": server.url, "pid": server.proc.pid,
                          "fingerprint": server.fingerprint}
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for name in (tls.CERT_NAME, tls.KEY_NAME):
            assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
        assert b"PRIVATE KEY" in (folder / tls.KEY_NAME).read_bytes()
    finally:
        server.stop()
    again = Served(tmp_path, "--tls", "--no-qr")  # the same certificate the next time
    try:
        assert again.fingerprint == server.fingerprint == _presented(again.url)
        assert again.wait_for("certificate: ").endswith(
            "kept from an earlier run; accept it once on each device")
    finally:
        again.stop()


def test_the_certificate_is_made_anew_only_when_it_will_not_do(tmp_path):
    names = ["192.0.2.7", "127.0.0.1", "::1", "localhost"]
    first = tls.self_signed(tmp_path, names)
    assert first.origin == "made now" and list(first.names) == names
    assert tls.self_signed(tmp_path, names[1:]).fingerprint == first.fingerprint  # a subset
    moved = tls.self_signed(tmp_path, ["198.51.100.3", *names[1:]])  # another network
    assert moved.fingerprint != first.fingerprint and "198.51.100.3" in moved.names
    key = tmp_path / tls.KEY_NAME
    key.chmod(0o644)  # a key others could read is no secret any more
    opened = tls.self_signed(tmp_path, moved.names)
    assert opened.fingerprint != moved.fingerprint and opened.origin == "made now"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    # a certificate that has all but run out
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate((tmp_path / tls.CERT_NAME).read_bytes())
    signing = serialization.load_pem_private_key(key.read_bytes(), None)
    now = datetime.datetime.now(datetime.timezone.utc)
    ending = _reissued(cert, signing, now - datetime.timedelta(days=364),
                       now + datetime.timedelta(hours=2))
    (tmp_path / tls.CERT_NAME).write_bytes(ending)
    assert tls.self_signed(tmp_path, list(opened.names)).origin == "made now"
    # a key file swapped for a link to another file: replaced, the file it named untouched
    elsewhere = tmp_path.parent / f"{tmp_path.name}-not-ours.txt"
    elsewhere.write_text("keep me")
    key.unlink()
    key.symlink_to(elsewhere)
    assert tls.self_signed(tmp_path, list(opened.names)).origin == "made now"
    assert not key.is_symlink() and elsewhere.read_text() == "keep me"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def _reissued(cert, key, start, end, public=None) -> bytes:
    """`cert` again, signed by `key`, valid from `start` to `end`, for `public` (else its own
    public key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    builder = x509.CertificateBuilder().subject_name(cert.subject).issuer_name(cert.issuer) \
        .public_key(public or cert.public_key()).serial_number(x509.random_serial_number()) \
        .not_valid_before(start).not_valid_after(end)
    for extension in cert.extensions:
        builder = builder.add_extension(extension.value, extension.critical)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@pytest.mark.parametrize("path", ["", "api/devices", "device.js", "ws", "../api/devices"])
@pytest.mark.parametrize("token", ["", "wrong", "upper"])
def test_every_url_needs_the_token_over_https(served, path, token):
    real = served.url.rsplit("/", 2)[1]
    given = {"upper": real.upper(), "": "", "wrong": "wrong"}[token]
    status, text = _https(f"{served.origin}{given}/{path}" if token else f"{served.origin}{path}")
    assert status == 403 and text.count("\n") == 1 and "token" in text and real not in text
    status, _ = _https(f"{served.url}api/devices")  # and with it, TLS or not, it answers
    assert status == 200


def test_listens_on_loopback_only_over_https(served):
    port = int(served.url.split(":")[2].split("/")[0])
    assert listening(port) == ["0100007F"]  # 127.0.0.1, and nothing else


def test_an_upload_over_the_bound_is_refused_over_https(use_it):
    body = pack({"device": None, "deviceType": None, "inputs": {}},
                {"model.webnn": b"", "model.weights": b"\0" * (2 << 20)})
    status, text = _https(use_it.url + "api/run", body)
    assert status == 413 and text.strip().count("\n") == 0


def test_the_client_pins_the_recorded_certificate(use_it):
    assert client.devices() == []  # through the record: https, pinned
    device = FakeDevice(use_it.url, "pinned", registration(), _doubles, use_it.fingerprint)
    try:
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        outputs, ran_on = client.run_on_device(_add_graph(), {"x": x}, "device:pinned")
        assert np.array_equal(outputs["y"], x + x)
        assert ran_on == "device 'pinned' (HeadlessChrome 153 on Linux, deviceType cpu)"
    finally:
        device.close()
    # the same server by the URL it printed, its pin given after it
    client.use_server(f"{use_it.url}#sha256={use_it.fingerprint.replace(':', '').lower()}")
    assert isinstance(client.devices(), list)


async def _doubles(job, session, base):
    import base64

    async with session.get(base.rsplit("/", 2)[0] + job["inputs"]["x"]) as response:
        x = np.frombuffer(await response.read(), "<f4")
    return {"type": "result", "id": job["id"],
            "outputs": {"y": base64.b64encode((x + x).astype("<f4").tobytes()).decode()}}


def _add_graph():
    b = converter.GraphBuilder("g")
    x = b.input("x", "float32", [2, 3])
    return b.build({"y": b.add(x, x)})


def test_another_certificate_is_refused_in_one_line(use_it):
    line = _one_line(_cli("verify", TINY, "--runtime", "device",
                          "--server", f"{use_it.url}#sha256={_WRONG}"))
    port = use_it.url.split(":")[2].split("/")[0]
    assert line == (f"error: https://127.0.0.1:{port}/: the device server's certificate is not "
                    f"the one pinned for it (SHA-256 {use_it.fingerprint}, pinned {_WRONG}); "
                    f"nothing was sent; another program may answer there: check the address, "
                    f"or use the URL and fingerprint `webnn-convert serve` printed")
    # a record whose fingerprint is not the server's: the same refusal
    record = use_it.cache / "devices" / "server.json"
    kept = record.read_text()
    try:
        record.write_text(json.dumps({**json.loads(kept), "fingerprint": _WRONG}))
        line = _one_line(_cli("verify", TINY, "--runtime", "device"))
        assert f"pinned {_WRONG}); nothing was sent" in line
    finally:
        record.write_text(kept)


def test_an_https_server_without_a_recorded_pin_is_refused(use_it):
    other = use_it.url.rsplit("/", 2)[0] + "/" + "t" * 22 + "/"  # not the recorded server
    line = _one_line(_cli("verify", TINY, "--runtime", "device", "--server", other))
    assert line.endswith("no certificate fingerprint is recorded here for this https device "
                         "server; run the command where `webnn-convert serve` runs, or append "
                         "#sha256=FINGERPRINT (the one it printed) to the --server URL")


@pytest.mark.parametrize("url, says", [
    ("https://127.0.0.1:1/TOKEN/#sha256=12", "--server: not a SHA-256 fingerprint (64 hex "
                                             "digits)"),
    ("https://127.0.0.1:1/TOKEN/#md5=" + "a" * 32, "is not a device server's URL"),
    ("https://127.0.0.1:1/TOKEN/#" + "a" * 64, "is not a device server's URL"),
    ("http://127.0.0.1:1/TOKEN/#sha256=" + "a" * 64, "is not a device server's URL"),
    # a port or host not in ASCII: one line showing it escaped, not an internal error
    ("http://127.0.0.1:\u0668\u0660/TOKEN/", '"http://127.0.0.1:\\u0668\\u0660/'),
    ("http://127.0.0.1:\uff18\uff10/TOKEN/", "is not a device server's URL"),
    ("http://127.0.0.1:8_0/TOKEN/", "is not a device server's URL"),
    ("http://127.0.0.1:+80/TOKEN/", "is not a device server's URL"),
    ("http://127.0.0.1:0/TOKEN/", "is not a device server's URL"),
    ("http://127.0.0.\u0661:80/TOKEN/", "is not a device server's URL")])
def test_a_bad_pin_or_port_in_the_url_gets_one_line(url, says):
    line = _one_line(_cli("verify", TINY, "--runtime", "device",
                          "--server", url.replace("TOKEN", "t" * 22)))
    assert says in line


def test_https_by_default_off_loopback(tmp_path, monkeypatch):
    from cli.commands.serve import _shown_host

    server = Served(tmp_path, "--no-qr", "--host", "0.0.0.0")
    try:
        address = _shown_host("0.0.0.0")
        assert server.url.startswith(f"https://{address}:")
        assert server.fingerprint == _presented(server.url)
        assert server.wait_for("certificate: ").startswith(
            f"certificate: self-signed, kept in {tmp_path / 'devices' / 'tls'}, for "
            f"{address}, " if address != "127.0.0.1" else "certificate: self-signed")
        # the record names the loopback address, pinned to the same certificate
        record = json.loads((tmp_path / "devices" / "server.json").read_text())
        assert record["url"].startswith("https://127.0.0.1:")
        assert record["fingerprint"] == server.fingerprint
        # the URL it printed, given as --server here: pinned by the record of the same token
        monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(tmp_path))
        client.use_server(server.url)
        assert client.devices() == []
    finally:
        client.use_server(None)
        server.stop()


# -- the user's own certificate ----------------------------------------------------------
def _pair(folder: Path, names=("127.0.0.1",), days=30) -> tuple[Path, Path]:
    """A certificate and key as mkcert writes them (here self-signed: no CA needed)."""
    made = tls._make(list(names))
    cert, key = folder / "host.pem", folder / "host-key.pem"
    cert.write_bytes(made.cert_pem)
    key.write_bytes(made.key_pem)
    key.chmod(0o600)
    return cert, key


def test_a_given_certificate_is_served_and_pinned(tmp_path, monkeypatch):
    cert, key = _pair(tmp_path)
    cache = tmp_path / "cache"
    server = Served(cache, "--no-qr", "--cert", str(cert), "--key", str(key))
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        der = x509.load_pem_x509_certificate(cert.read_bytes()).public_bytes(Encoding.DER)
        assert server.fingerprint == tls.fingerprint(der) == _presented(server.url)
        assert server.wait_for("certificate: ").startswith(f"certificate: {cert} (given), for "
                                                          f"127.0.0.1, valid until ")
        assert not (cache / "devices" / "tls").exists()  # nothing made
        monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(cache))
        client.use_server(None)
        assert client.devices() == []
    finally:
        client.use_server(None)
        server.stop()


def x509_of(path: Path):
    from cryptography import x509

    return x509.load_pem_x509_certificate(path.read_bytes())


def _dates():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)


def _hostile(kind: str, tmp_path: Path) -> tuple[list[str], str]:
    """serve's arguments for a hostile --cert/--key, and the end of the line it must print."""
    cert, key = _pair(tmp_path)
    if kind == "missing":
        return ["--cert", tmp_path / "nope.pem", "--key", key], "the TLS certificate (--cert) " \
            "does not exist"
    if kind == "folder":
        return ["--cert", cert, "--key", tmp_path], "the TLS key (--key) is a folder; give a " \
            "PEM file"
    if kind == "link outside":
        (tmp_path / "inner").mkdir()
        (tmp_path / "inner" / "key.pem").symlink_to(key)
        return ["--cert", cert, "--key", tmp_path / "inner" / "key.pem"], \
            f"the TLS key (--key) is a link to {key}, outside its folder {tmp_path / 'inner'}; " \
            f"name the file it links to"
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return ["--cert", tmp_path / "fifo", "--key", key], \
            "the TLS certificate (--cert) is not a regular file; give a PEM file"
    if kind == "unreadable":
        if os.geteuid() != 0:
            key.chmod(0)
            return ["--cert", cert, "--key", key], "the TLS key (--key) cannot be read " \
                "(permission denied)"
        # root reads any file it owns: a write-only sysctl is the one it may not read
        unreadable = Path("/proc/sys/vm/compact_memory")
        if not unreadable.exists():
            pytest.skip("as root, with no unreadable file to point at")
        return ["--cert", unreadable, "--key", key], "the TLS certificate (--cert) cannot be " \
            "read (permission denied)"
    if kind == "key readable by others":
        key.chmod(0o644)
        return ["--cert", cert, "--key", key], "the TLS key (--key) can be read by others " \
            f"(mode 0644); make it its owner's only: chmod 600 {key}"
    if kind == "not pem":
        cert.write_bytes(b"\x00" * 100)
        return ["--cert", cert, "--key", key], f"{cert}: not a PEM certificate; give the " \
            "certificate file (-----BEGIN CERTIFICATE-----)"
    if kind == "another's key":
        other = tls._make(["127.0.0.1"])
        key.write_bytes(other.key_pem)
        return ["--cert", cert, "--key", key], f"{key}: the key is not the certificate's; give " \
            "the key the certificate was made for"
    if kind == "encrypted key":
        from cryptography.hazmat.primitives import serialization

        loaded = serialization.load_pem_private_key(key.read_bytes(), None)
        key.write_bytes(loaded.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.PKCS8,
                                             serialization.BestAvailableEncryption(b"pw")))
        return ["--cert", cert, "--key", key], f"{key}: the key is encrypted; give an " \
            "unencrypted key (mkcert writes one)"
    if kind == "expired":
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        now = datetime.datetime.now(datetime.timezone.utc)
        signing = serialization.load_pem_private_key(key.read_bytes(), None)
        cert.write_bytes(_reissued(x509.load_pem_x509_certificate(cert.read_bytes()), signing,
                                   now - datetime.timedelta(days=30),
                                   now - datetime.timedelta(days=1)))
        return ["--cert", cert, "--key", key], "not now; make a new one (mkcert HOST)"
    if kind == "weak key":
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        weak = rsa.generate_private_key(65537, 1024)
        cert.write_bytes(_reissued(x509_of(cert), weak, *_dates(), public=weak.public_key()))
        key.write_bytes(weak.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        return ["--cert", cert, "--key", key], f"{cert}, {key}: OpenSSL will not serve this " \
            "certificate and key (EE_KEY_TOO_SMALL); make one with a 2048-bit RSA or an EC " \
            "key, signed with SHA-256 (mkcert does)"
    if kind == "cert without key":
        return ["--cert", cert], "error: --cert and --key go together; give both, or neither for " \
            "the self-signed certificate"
    assert kind == "cert with no-tls"
    return ["--cert", cert, "--key", key, "--no-tls"], "error: --cert/--key serve https; drop --no-tls"


@pytest.mark.parametrize("kind", ["missing", "folder", "link outside", "fifo", "unreadable",
                                  "key readable by others", "not pem", "another's key",
                                  "encrypted key", "expired", "weak key", "cert without key",
                                  "cert with no-tls"])
def test_a_hostile_cert_or_key_gets_one_line(kind, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(cache))
    args, ending = _hostile(kind, tmp_path)
    result = _cli("serve", "--port", "0", "--no-qr", *args)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].endswith(ending), result.output
    assert not (cache / "devices" / "server.json").exists()  # it never started
    assert not (cache / "devices" / "tls").exists()
