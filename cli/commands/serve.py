"""`webnn-convert serve`: the device server that phones and laptops open to run graphs."""
from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import sys
from pathlib import Path

import click

from ..numbers import Decimal, Integer
from ..terminal import echo

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_EVERY_INTERFACE = ("0.0.0.0", "::")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on: loopback by default (this machine only); "
                   "0.0.0.0 or this machine's LAN address lets phones and laptops on the "
                   "network open the page (the URL's token is then all that guards it; "
                   "served over https, see --tls).")
@click.option("--tls/--no-tls", default=None,
              help="Serve over https. On by default when --host is not loopback: a browser "
                   "gives a page WebNN (navigator.ml) only in a secure context, which "
                   "http://localhost is and http://192.168.x.y is not, and https keeps the "
                   "token off the network's wire. The certificate is self-signed for the "
                   "address the URL names and this machine's loopback ones, made on first "
                   "use and kept (mode 0600) in the converter's cache, devices/tls, for a "
                   "year; each device accepts it once (check the SHA-256 fingerprint "
                   "printed). --no-tls off loopback: for Chrome's "
                   "--unsafely-treat-insecure-origin-as-secure flag.")
@click.option("--cert", "cert_file", metavar="FILE",
              help="Serve this certificate (PEM; e.g. from mkcert, which devices can be "
                   "made to trust) instead of the self-signed one; implies --tls.")
@click.option("--key", "key_file", metavar="FILE",
              help="The key of --cert (PEM, unencrypted, readable by its owner only).")
@click.option("--port", type=Integer(0, 65535), default=8765, show_default=True,
              help="The port (0: any free one; the URL printed says which).")
@click.option("--max-upload-mb", type=Integer(min=1), default=1024, show_default=True,
              help="The largest job (a graph's weights and inputs) and the largest result a "
                   "device may send back, in MiB.")
@click.option("--job-timeout", type=Decimal(min=1), default=600, show_default=True,
              help="Seconds a device may take over one job.")
@click.option("--targets-dir", type=click.Path(file_okay=False),
              help="Where each device's opSupportLimits() is saved as a target file, "
                   "NAME-TYPE.opSupportLimits.json (default: the converter's cache, "
                   "devices/targets).")
@click.option("--no-qr", is_flag=True, help="Print the URL without the QR code.")
def command(host, tls, cert_file, key_file, port, max_upload_mb, job_timeout, targets_dir,
            no_qr):
    """Serve the device page, and run graphs on the devices that open it.

    Prints the page's URL (its random token included) as the first line; over https, the
    certificate's SHA-256 fingerprint next (compare it with what the device's browser shows);
    then a QR code for phones. A browser that opens it registers: its user agent and
    platform, and each WebNN deviceType that gives a context, whose opSupportLimits() is
    saved as a target file for `check --target FILE`. It then runs the jobs of
    `verify/run --runtime device[:NAME]`, which pin the certificate serve recorded.
    Runs until stopped (Ctrl-C). Every request must carry the token; uploads are bounded by
    --max-upload-mb; nothing listens beyond --host.
    """
    from converter.devices.protocol import new_token
    from converter.errors import ConverterError
    from converter.files.cache import cache_dir

    if (cert_file is None) != (key_file is None):
        raise ConverterError("--cert and --key go together", fix="give both, or neither for "
                                                                 "the self-signed certificate")
    if cert_file is not None and tls is False:
        raise ConverterError("--cert/--key serve https", fix="drop --no-tls")
    if tls is None:
        tls = cert_file is not None or not _is_loopback(host)
    certificate = _certificate(host, cert_file, key_file) if tls else None
    folder = Path(targets_dir) if targets_dir else cache_dir() / "devices" / "targets"
    _run(lambda: _serve(host, port, new_token(), folder, max_upload_mb << 20, job_timeout,
                        not no_qr, certificate))


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _certificate(host: str, cert_file: str | None, key_file: str | None):
    """(the certificate, a line saying whose it is): the user's, else the self-signed one."""
    from converter.devices import tls
    from converter.files.cache import cache_dir

    if cert_file is not None:
        given = tls.given(Path(cert_file), Path(key_file))
        return given, given.describe(f"{cert_file} (given)")
    folder = cache_dir() / "devices" / "tls"
    made = tls.self_signed(folder, tls.certificate_names(_shown_host(host), host))
    return made, made.describe(f"self-signed, kept in {folder}") + \
        "; accept it once on each device"


def _run(make) -> None:
    """asyncio.run(make()), from a thread of its own when this thread already runs an event
    loop (a notebook, Playwright's sync API): asyncio.run refuses to nest. Errors come back."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(make())
        return
    import threading

    failed: list[BaseException] = []

    def serve() -> None:
        try:
            asyncio.run(make())
        except BaseException as error:  # noqa: BLE001  (handed back to the caller's thread)
            failed.append(error)

    worker = threading.Thread(target=serve, name="webnn-convert serve")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]


async def _serve(host, port, token, targets_dir, max_upload, job_timeout, qr,
                 certificate=None) -> None:
    from converter.devices.record import remove_record, write_record
    from converter.devices.server import DeviceServer, page_url

    server = DeviceServer(token, targets_dir, max_upload=max_upload, job_timeout=job_timeout,
                          say=echo)
    try:
        try:
            bound = await server.start(
                host, port, certificate[0].server_context() if certificate else None)
        except OSError as e:  # the port is taken, the address is not this machine's
            from converter.errors import ConverterError

            why = os.strerror(e.errno) if e.errno else str(e)
            raise ConverterError(f"cannot listen there ({why})",
                                 where=f"{host}:{port}",
                                 fix="choose another --port (0: any free one) or --host") from None
        scheme = "https" if certificate else "http"
        url = page_url(_shown_host(host), bound, token, scheme)
        echo(url)  # the first line: what a script or a test reads
        if certificate:  # the second: what the device's browser shows of the certificate
            echo(f"certificate SHA-256 fingerprint: {certificate[0].fingerprint}")
        if qr:
            _print_qr(url)
        if certificate:
            echo(certificate[1])
        local = page_url("127.0.0.1" if ":" not in host else "::1", bound, token, scheme)
        recorded = local if host in _EVERY_INTERFACE else url
        write_record(recorded, certificate[0].fingerprint if certificate else None)
        echo("open it on each device (keep the page open); stop with Ctrl-C")
        try:
            await asyncio.Event().wait()
        finally:
            remove_record(recorded)
    finally:
        await server.stop()


def _shown_host(host: str) -> str:
    """The address a device types: for 0.0.0.0 (every interface), this machine's LAN address."""
    if host not in _EVERY_INTERFACE:
        return host
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:  # a UDP connect sends nothing: it only picks the interface a route would use
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _print_qr(url: str) -> None:
    import segno

    segno.make(url, error="l").terminal(out=sys.stdout, compact=True)
    sys.stdout.flush()
