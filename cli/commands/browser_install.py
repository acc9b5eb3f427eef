"""`webnn-convert browser-install [--dir DIR]`: install the Chromium whose WebNN runs here."""
from __future__ import annotations

import click

from ..terminal import echo


@click.command("browser-install")
@click.option("--dir", "folder", type=click.Path(file_okay=False),
              help="Where to install (default: $WEBNN_CONVERTER_CHROMIUM, else "
                   "~/.cache/webnn-converter/chromium).")
def command(folder: str | None) -> None:
    """Install headless Chromium 153 with WebNN (on LiteRT) for `--runtime chromium`.

    It comes from the npm package @sparticuz/chromium@153.0.0, which ships the binary: npm
    installs it, the binary and its swiftshader libraries are decompressed beside it, and
    libnss3 is installed with apt-get when missing (as root). Running it again does nothing
    once installed. Needs Node.js with npm. A folder other than the default is found by the
    runtime through WEBNN_CONVERTER_CHROMIUM=FOLDER.
    """
    from converter.runtimes.browser_install import ENV_VAR, browser_dir, install

    binary = install(folder, log=lambda line: echo(line, err=True))
    echo(str(binary))
    if folder is not None and binary.parent.resolve() != browser_dir().resolve():
        echo(f"set {ENV_VAR}={binary.parent} so that the chromium runtime finds it",
             err=True)
