"""The values of `--runtime` (ort, chromium, device[:NAME[:TYPE]]) and `--server URL` (the
device server; by default the one `webnn-convert serve` started last on this machine), as
options.VOCABULARY declares them."""
from __future__ import annotations

from typing import Any

import click

__all__ = ["Runtime", "use_server"]


class Runtime(click.ParamType):
    """One of `choices` (ort, chromium), or device, device:NAME, device:NAME:TYPE."""

    name = "runtime"

    def __init__(self, choices: tuple[str, ...]):
        self.choices = choices

    def convert(self, value: Any, param, ctx) -> str:
        if value in self.choices:  # (a plain conversion imports none of the below)
            return value
        if isinstance(value, str) and (value == "device" or value.startswith("device:")):
            from converter.devices.protocol import parse_runtime
            from converter.errors import ConverterError

            try:
                parse_runtime(value)
            except ConverterError as e:
                self.fail(e.line(), param, ctx)
            return value
        self.fail(f"{value!r} is not one of {', '.join(self.choices)}, device[:NAME[:TYPE]]",
                  param, ctx)

    def get_metavar(self, param, ctx=None) -> str:
        return f"[{'|'.join(self.choices)}|device[:NAME[:TYPE]]]"


def use_server(ctx: click.Context, param, value: str | None) -> str | None:
    """--server's callback: the device server the command's device runtime talks to."""
    if value is not None:
        from converter.devices.client import use_server as choose

        choose(value)
    return value
