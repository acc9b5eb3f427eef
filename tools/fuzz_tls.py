"""Hostile certificate and key files for `serve --cert C --key K` (converter/devices/tls.py).

Each case is a folder holding `cert.pem` and `key.pem` (the key mode 0600 unless the case is
about its mode), one of them damaged or replaced; the command is

    webnn-convert serve --port 0 --no-qr --cert C --key K

run by tools/fuzz.py with its own cache folder (WEBNN_CONVERTER_CACHE). Every case here must be
refused before serve listens: exit 2, exactly one error line, no traceback, and neither
`devices/server.json` (the record clients read) nor `devices/tls` (the self-signed pair) left in
the cache. A serve that listens never ends on its own: it runs into the case's short timeout,
is killed, and counts as a failure.

The valid pair every mutation starts from is made once per corpus with the `cryptography`
package: an EC P-256 key derived from a fixed number, and a certificate for 127.0.0.1 and
localhost valid from an hour ago for a year (its signature, ECDSA's, differs run to run).
"""
from __future__ import annotations

import base64
import datetime
import os
from pathlib import Path

from fuzz_surfaces import TERMINAL, Made

SERVE_TIMEOUT = 15.0  # a refusal takes well under a second; a listening serve never ends


def _key(number: int):
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.derive_private_key(number, ec.SECP256R1())


def _certificate(key, *, days_from: float = -1 / 24, days: float = 365,
                 name: str = "fuzz") -> bytes:
    """A self-signed PEM certificate for `key`, valid from `days_from` days from now."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start = now + datetime.timedelta(days=days_from)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    built = (x509.CertificateBuilder()
             .subject_name(subject).issuer_name(subject).public_key(key.public_key())
             .serial_number(0x5EC12E7).not_valid_before(start)
             .not_valid_after(start + datetime.timedelta(days=days))
             .add_extension(x509.SubjectAlternativeName([
                 x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                 critical=False)
             .sign(key, hashes.SHA256()))
    return built.public_bytes(serialization.Encoding.PEM)


def _key_pem(key, password: bytes | None = None) -> bytes:
    from cryptography.hazmat.primitives import serialization

    encryption = serialization.BestAvailableEncryption(password) if password \
        else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             encryption)


def _flip_in(pem: bytes, needle: bytes, at: int) -> bytes:
    """The PEM block with one bit flipped at byte `at` of `needle` inside its DER (a point or
    scalar the key check depends on, so the pair cannot still match)."""
    body = pem.split(b"\n", 1)[1].rsplit(b"-----END", 1)[0]
    der = bytearray(base64.b64decode(body))
    where = bytes(der).index(needle) + at
    der[where] ^= 0x10
    lines = base64.encodebytes(bytes(der)).replace(b"\n", b"")
    wrapped = b"\n".join(lines[i:i + 64] for i in range(0, len(lines), 64))
    return pem.split(b"\n", 1)[0] + b"\n" + wrapped + b"\n" + b"-----END" + \
        pem.rsplit(b"-----END", 1)[1]


def _point(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.X962,
                                         serialization.PublicFormat.UncompressedPoint)


def _refused(out: Path, exit_code: int | None) -> str | None:
    """serve's safe outcome on a bad pair: exit 2, one error line, nothing in the cache."""
    text = "\n".join((out / n).read_text("utf-8", "replace") for n in ("stdout.txt",
                                                                        "stderr.txt"))
    errors = [line for line in text.splitlines() if line.lower().startswith("error:")]
    if exit_code != 2:
        return f"exit {exit_code}, not 2"
    if len(errors) != 1:
        return f"{len(errors)} error lines, not 1"
    left = [p for p in ("devices/server.json", "devices/tls") if (out / "cache" / p).exists()]
    return f"left {left} in the cache" if left else None


def _write(folder: Path, cert: bytes | None, key: bytes | None, key_mode: int = 0o600) -> None:
    if cert is not None:
        (folder / "cert.pem").write_bytes(cert)
    if key is not None:
        (folder / "key.pem").write_bytes(key)
        os.chmod(folder / "key.pem", key_mode)


def tls_pair(kind: str):
    """A cert/key pair damaged as `kind` says, run through serve; only a refusal is safe."""
    def make(folder: Path, root: Path) -> Made:
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = _key(0x5EC12E7)
        cert, key_pem = _certificate(key), _key_pem(key)
        cert_name, key_name = "cert.pem", "key.pem"
        if kind == "valid":  # what every other kind damages: serve listens on it
            _write(folder, cert, key_pem)
        elif kind == "cert-truncated":
            _write(folder, cert[:len(cert) // 2], key_pem)
        elif kind == "key-truncated":
            _write(folder, cert, key_pem[:len(key_pem) * 2 // 3])
        elif kind == "cert-point-flipped":  # the public key no longer a point of the curve
            _write(folder, _flip_in(cert, _point(key), 20), key_pem)
        elif kind == "key-scalar-flipped":  # another private key, or one OpenSSL refuses
            scalar = key.private_numbers().private_value.to_bytes(32, "big")
            _write(folder, cert, _flip_in(key_pem, scalar, 7))
        elif kind == "cert-armor-flipped":
            _write(folder, cert.replace(b"CERTIFICATE", b"CERTIFICATF", 1), key_pem)
        elif kind == "chain-1mib-leaf-not-the-keys":
            # a megabyte of parsing, then a leaf that is another key's
            other = _certificate(_key(7), name="other")
            count = ((1 << 20) - len(cert)) // len(other)
            _write(folder, other * count + cert, key_pem)
        elif kind == "chain-over-1mib":
            _write(folder, cert * ((1 << 20) // len(cert) + 1), key_pem)
        elif kind == "key-of-another":
            _write(folder, cert, _key_pem(_key(7)))
        elif kind == "key-encrypted":
            _write(folder, cert, _key_pem(key, b"secret"))
        elif kind == "key-mode-0644":
            _write(folder, cert, key_pem, key_mode=0o644)
        elif kind == "rsa-1024":  # OpenSSL's default security level refuses the weak key
            weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
            _write(folder, _certificate(weak), _key_pem(weak))
        elif kind == "cert-expired":
            _write(folder, _certificate(key, days_from=-400, days=30), key_pem)
        elif kind == "cert-not-yet-valid":
            _write(folder, _certificate(key, days_from=30), key_pem)
        elif kind == "key-link-out-of-folder":
            (root / "outside" / "serve-key.pem").write_bytes(key_pem)
            os.chmod(root / "outside" / "serve-key.pem", 0o600)
            _write(folder, cert, None)
            os.symlink(root / "outside" / "serve-key.pem", folder / "key.pem")
        elif kind == "cert-link-out-of-folder":
            (root / "outside" / "serve-cert.pem").write_bytes(cert)
            _write(folder, None, key_pem)
            os.symlink(root / "outside" / "serve-cert.pem", folder / "cert.pem")
        elif kind == "key-fifo":
            _write(folder, cert, None)
            os.mkfifo(folder / "key.pem", 0o600)
        elif kind == "cert-fifo":
            _write(folder, None, key_pem)
            os.mkfifo(folder / "cert.pem")
        elif kind == "cert-folder":
            _write(folder, None, key_pem)
            (folder / "cert.pem").mkdir()
        elif kind == "key-2mib":
            _write(folder, cert, key_pem + b"\n" * (2 << 20))
        elif kind == "cert-2mib-sparse":
            _write(folder, None, key_pem)
            with open(folder / "cert.pem", "wb") as f:
                f.truncate(2 << 20)
        elif kind == "cert-missing":
            _write(folder, None, key_pem)
        elif kind == "cert-terminal-name":  # the error quotes the path: escaped, one line
            cert_name = "c" + TERMINAL.replace("/", "") + ".pem"
            (folder / cert_name).write_bytes(cert[:100])
            _write(folder, None, key_pem)
        else:
            raise ValueError(kind)
        args = ["--port", "0", "--no-qr", "--cert", "{case}/" + cert_name,
                "--key", "{case}/" + key_name]
        return Made(folder / cert_name, {"serve": (args, [])}, must_refuse=True,
                    outcome=_refused, entry_arg=False, timeout=SERVE_TIMEOUT)
    return make


TLS: list[tuple[str, object]] = [(f"tls-{kind}", tls_pair(kind)) for kind in (
    "cert-truncated", "key-truncated", "cert-point-flipped", "key-scalar-flipped",
    "cert-armor-flipped", "chain-1mib-leaf-not-the-keys", "chain-over-1mib", "key-of-another",
    "key-encrypted", "key-mode-0644", "rsa-1024", "cert-expired", "cert-not-yet-valid",
    "key-link-out-of-folder", "cert-link-out-of-folder", "key-fifo", "cert-fifo",
    "cert-folder", "key-2mib", "cert-2mib-sparse", "cert-missing", "cert-terminal-name")]
