"""HTTPS for the device server: WebNN (`navigator.ml`) exists only in a secure context, and a
page a phone opens at `http://192.168.x.y:PORT/` is not one (only localhost is).

    certificate = self_signed(folder, ["192.168.1.5", "127.0.0.1", "localhost"])
    certificate = given(Path("host.pem"), Path("host-key.pem"))       # mkcert's, say
    context = certificate.server_context()
    certificate.fingerprint                                            # "AB:CD:...", SHA-256

`self_signed` makes a certificate (EC P-256, a year) for the addresses a device types on first
use and keeps it with its key in `folder` (CACHE/devices/tls, the folder and both files its
owner's only), reusing it until it nears its end or the addresses change. `given` reads a
user's pair: a file a user names is hostile, so each is opened without following a final
symlink, refused if it is a link out of its own folder, not a regular file, unreadable,
oversized, not PEM, an encrypted or group/world-readable key, a key that is not the
certificate's, or a certificate out of its dates; each as one line. The clients pin the
certificate by its SHA-256 fingerprint (record.py keeps it, client.py checks it).
"""
from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import re
import secrets
import shutil
import ssl
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConverterError

__all__ = ["Certificate", "self_signed", "given", "fingerprint", "check_fingerprint"]

_DAYS = 365
# A saved certificate this close to its end is made anew: a server may run for hours.
_MARGIN = datetime.timedelta(days=1)
_MAX_PEM = 1 << 20  # far more than a certificate chain or a key takes
_DNS = re.compile(r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
                  r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_HEX = re.compile(r"[0-9A-Fa-f]{64}")
CERT_NAME, KEY_NAME = "serve-cert.pem", "serve-key.pem"


@dataclass(frozen=True)
class Certificate:
    """A certificate and its key, as PEM; where it came from, for the line serve prints."""
    cert_pem: bytes
    key_pem: bytes
    fingerprint: str  # SHA-256 of the leaf's DER, "AB:CD:..." as browsers show it
    names: tuple[str, ...]  # its subject alternative names
    until: datetime.datetime
    origin: str  # "made now", "kept from an earlier run", "given"

    def server_context(self, where: str | None = None) -> ssl.SSLContext:
        """An SSL context serving this certificate (TLS 1.2 at least). Python loads a chain
        from files only: the checked bytes go through a private temporary folder, so what is
        served is what was checked, not whatever the path holds by now. `where` names the
        files in the error when OpenSSL refuses them."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        folder = tempfile.mkdtemp(prefix="webnn-tls-")  # mode 0700
        try:
            for name, data in (("cert.pem", self.cert_pem), ("key.pem", self.key_pem)):
                fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o600)
                with os.fdopen(fd, "wb") as stream:
                    stream.write(data)
            context.load_cert_chain(os.path.join(folder, "cert.pem"),
                                    os.path.join(folder, "key.pem"))
        except ssl.SSLError as e:  # what OpenSSL refuses to serve: a weak key, a bad hash
            raise ConverterError(f"OpenSSL will not serve this certificate and key "
                                 f"({e.reason or e})", where=where,
                                 fix="make one with a 2048-bit RSA or an EC key, signed "
                                     "with SHA-256 (mkcert does)") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return context

    def describe(self, where: str) -> str:
        """One line: whose, for which names, until when, made or kept, where."""
        return (f"certificate: {where}, for {', '.join(self.names) or 'no names'}, valid until "
                f"{self.until:%Y-%m-%d}, {self.origin}")


def fingerprint(der: bytes) -> str:
    """SHA-256 of a certificate's DER, as uppercase hex pairs joined by colons."""
    return _pairs(hashlib.sha256(der).hexdigest())


def check_fingerprint(text: str, where: str) -> str:
    """A SHA-256 fingerprint as given (hex, colons or spaces between pairs optional) in the
    form `fingerprint` writes."""
    digits = re.sub(r"[: ]", "", text) if isinstance(text, str) else ""
    if not _HEX.fullmatch(digits):
        raise ConverterError("not a SHA-256 fingerprint (64 hex digits)", where=where,
                             fix="copy the fingerprint `webnn-convert serve` printed")
    return _pairs(digits)


def _pairs(digits: str) -> str:
    digits = digits.upper()
    return ":".join(digits[i:i + 2] for i in range(0, len(digits), 2))


# -- the self-signed certificate serve makes ------------------------------------------------
def self_signed(folder: Path, names: list[str]) -> Certificate:
    """The certificate kept in `folder` if it is still good for `names`, else a new one
    (saved there, both files mode 0600, the folder 0700)."""
    folder = Path(folder)
    _private_folder(folder)
    kept = _kept(folder, names)
    if kept is not None:
        return kept
    made = _make(names)
    from .registry import write_atomically  # mkstemp: 0600 from the first byte

    # The key first: killed between the two, the pair does not match and is made anew.
    write_atomically(folder / KEY_NAME, made.key_pem.decode("ascii"))
    write_atomically(folder / CERT_NAME, made.cert_pem.decode("ascii"))
    return made


def _private_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise ConverterError("the folder for serve's certificate is not a folder of this user's",
                             where=str(folder), fix="remove it; serve makes it anew")
    os.chmod(folder, 0o700)


def _kept(folder: Path, names: list[str]) -> Certificate | None:
    """The saved certificate, or None when there is none or it will not do: not both files
    this user's own and private, not a matching pair, near its end, or lacking a name."""
    data = []
    for name in (CERT_NAME, KEY_NAME):
        path = folder / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 \
                or st.st_size > _MAX_PEM:
            return None
        data.append(_read(path, "saved certificate file"))
    try:
        certificate = _pair(data[0], data[1], "kept from an earlier run")
    except ConverterError:
        return None
    now = datetime.datetime.now(datetime.timezone.utc)
    if certificate.until - _MARGIN < now or not set(names) <= set(certificate.names):
        return None
    return certificate


def _make(names: list[str]) -> Certificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webnn-convert serve"),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                            "webnn-converter (self-signed, this machine)")])
    alternative = [x509.IPAddress(ipaddress.ip_address(n)) if _is_ip(n) else x509.DNSName(n)
                   for n in names]
    built = (x509.CertificateBuilder()
             .subject_name(subject).issuer_name(subject)
             .public_key(key.public_key())
             .serial_number(secrets.randbits(127) | 1)
             .not_valid_before(now - datetime.timedelta(hours=1))  # a phone's clock may lag
             .not_valid_after(now + datetime.timedelta(days=_DAYS))
             .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                          key_encipherment=False, data_encipherment=False,
                                          key_agreement=False, key_cert_sign=False,
                                          crl_sign=False, encipher_only=False,
                                          decipher_only=False), critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                            critical=False)
             .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return _pair(built.public_bytes(serialization.Encoding.PEM), key_pem, "made now")


def certificate_names(shown_host: str, host: str) -> list[str]:
    """The names a self-signed certificate covers: the address the printed URL names, the one
    --host names when it is a name (not every interface), this machine's loopback ones."""
    names = []
    for name in (shown_host, host, "127.0.0.1", "::1", "localhost"):
        if name in ("0.0.0.0", "::") or name in names:
            continue
        if _is_ip(name) or _DNS.fullmatch(name):
            names.append(name.lower() if not _is_ip(name) else str(ipaddress.ip_address(name)))
    return names


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


# -- a certificate the user gives ---------------------------------------------------------
def given(cert_path: Path, key_path: Path) -> Certificate:
    """The user's certificate (chain) and key files, each checked (see the module's doc)."""
    cert_pem = _read(Path(cert_path), "TLS certificate (--cert)")
    key_pem = _read(Path(key_path), "TLS key (--key)", private=True)
    pair = _pair(cert_pem, key_pem, "given", cert_where=str(cert_path), key_where=str(key_path))
    pair.server_context(f"{cert_path}, {key_path}")  # refused now, not once serve listens
    return pair


def _read(path: Path, what: str, private: bool = False) -> bytes:
    """A file's bytes: not through a link out of its folder, a regular file of at most
    _MAX_PEM bytes, and (`private`) readable by its owner only."""
    where = str(path)
    home = os.path.realpath(path.parent)
    real = os.path.realpath(path)
    if os.path.commonpath([home, real]) != home:
        raise ConverterError(f"the {what} is a link to {real}, outside its folder {home}",
                             where=where, fix="name the file it links to")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise ConverterError(f"the {what} does not exist", where=where) from None
    except PermissionError:
        raise ConverterError(f"the {what} cannot be read (permission denied)",
                             where=where) from None
    except OSError as e:  # ELOOP: a link swapped in since realpath; ENXIO: a socket
        raise ConverterError(f"the {what} cannot be opened ({e.strerror})", where=where) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ConverterError(f"the {what} is {kind}", where=where, fix="give a PEM file")
        if private and st.st_mode & 0o077:
            raise ConverterError(f"the {what} can be read by others (mode "
                                 f"{stat.S_IMODE(st.st_mode):04o})", where=where,
                                 fix=f"make it its owner's only: chmod 600 {path}")
        if st.st_size > _MAX_PEM:
            raise ConverterError(f"the {what} is {st.st_size} bytes, over the {_MAX_PEM} a PEM "
                                 f"file may take", where=where, fix="give a PEM file")
        return os.read(fd, _MAX_PEM)  # a regular file of at most that: one read takes it
    except OSError as e:
        raise ConverterError(f"the {what} cannot be read ({e.strerror})", where=where) from None
    finally:
        os.close(fd)


def _pair(cert_pem: bytes, key_pem: bytes, origin: str, cert_where: str = "--cert",
          key_where: str = "--key") -> Certificate:
    """A certificate (its first PEM block the server's own) and its unencrypted key, which
    must be the certificate's, in their dates."""
    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        chain = x509.load_pem_x509_certificates(cert_pem)
    except ValueError:
        raise ConverterError("not a PEM certificate", where=cert_where,
                             fix="give the certificate file (-----BEGIN CERTIFICATE-----)") \
            from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise ConverterError("the key is encrypted", where=key_where,
                             fix="give an unencrypted key (mkcert writes one)") from None
    except ValueError:
        raise ConverterError("not a PEM private key", where=key_where,
                             fix="give the key file (-----BEGIN PRIVATE KEY-----)") from None
    except UnsupportedAlgorithm:
        raise ConverterError("a private key of a kind this server cannot use",
                             where=key_where, fix="give an RSA or EC key") from None
    leaf = chain[0]
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    try:
        public = leaf.public_key().public_bytes(*spki)
        alternative = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = tuple(str(n.value) for n in alternative)
    except x509.ExtensionNotFound:
        names = ()
    except (ValueError, UnsupportedAlgorithm) as e:  # a malformed extension, an odd key
        raise ConverterError(f"the certificate cannot be read ({e})", where=cert_where,
                             fix="give a certificate browsers take (mkcert makes one)") from None
    if key.public_key().public_bytes(*spki) != public:
        raise ConverterError("the key is not the certificate's", where=key_where,
                             fix="give the key the certificate was made for")
    now = datetime.datetime.now(datetime.timezone.utc)
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        raise ConverterError(f"the certificate is valid from {leaf.not_valid_before_utc:%Y-%m-%d}"
                             f" to {leaf.not_valid_after_utc:%Y-%m-%d}, not now",
                             where=cert_where, fix="make a new one (mkcert HOST)")
    return Certificate(cert_pem, key_pem,
                       fingerprint(leaf.public_bytes(serialization.Encoding.DER)), names,
                       leaf.not_valid_after_utc, origin)
