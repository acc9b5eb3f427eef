"""The options that choose where a graph runs: `--runtime ort|chromium|device[:NAME[:TYPE]]`
and `--server URL` (the device server; by default the one `webnn-convert serve` started last
on this machine)."""
from __future__ import annotations

from typing import Any

import click

__all__ = ["RUNTIME_HELP", "Runtime", "runtime_options"]

RUNTIME_HELP = ("Where the WebNN graph runs: ort = ONNX Runtime (through the ONNX lowering); "
                "chromium = a real headless Chromium's WebNN (`webnn-convert browser-install` "
                "first); device[:NAME[:TYPE]] = a phone or laptop whose browser has the page "
                "of `webnn-convert serve` open (NAME may be left out when one is connected; "
                "TYPE is its deviceType, cpu by default).")


class Runtime(click.ParamType):
    """ort, chromium, device, device:NAME or device:NAME:TYPE."""

    name = "runtime"

    def convert(self, value: Any, param, ctx) -> str:
        if value in ("ort", "chromium"):  # (a plain conversion imports none of the below)
            return value
        if isinstance(value, str) and (value == "device" or value.startswith("device:")):
            from converter.devices.protocol import parse_runtime
            from converter.errors import ConverterError

            try:
                parse_runtime(value)
            except ConverterError as e:
                self.fail(e.line(), param, ctx)
            return value
        self.fail(f"{value!r} is not one of ort, chromium, device[:NAME[:TYPE]]", param, ctx)

    def get_metavar(self, param, ctx=None) -> str:
        return "[ort|chromium|device[:NAME[:TYPE]]]"


def _use_server(ctx: click.Context, param, value: str | None) -> str | None:
    if value is not None:
        from converter.devices.client import use_server

        use_server(value)
    return value


def runtime_options(func):
    """--runtime (above) and --server, for a command that runs a graph."""
    func = click.option("--server", metavar="URL", callback=_use_server, expose_value=False,
                        help="With --runtime device: the device server's URL, as `webnn-"
                             "convert serve` printed it (default: the one it started last "
                             "here).")(func)
    return click.option("--runtime", type=Runtime(), default="ort", show_default=True,
                        help=RUNTIME_HELP)(func)
