"""One module per command; each exposes `command`, a click.Command.

The group imports a command's module only when that command runs (or `--help` lists them
all), so `webnn-convert --version` and a conversion do not import what the zoo or the browser
installer need.
"""
from __future__ import annotations

import importlib

import click

# command name -> its module, in the order `--help` lists them
COMMANDS = {
    "convert": "convert_model", "verify": "verify_model", "run": "run_graph",
    "check": "check_graph", "targets": "list_targets", "probe": "probe_backend",
    "inspect": "inspect_graph",
    "validate": "validate_graph", "ops": "list_ops", "browser-install": "browser_install",
    "zoo": "zoo", "serve": "serve",
}


def command_in(args: list[str]) -> str | None:
    """The command an argument list names (its first argument that is not an option of the
    group: --debug, --version, -h/--help take no value), if it is one of COMMANDS."""
    first = next((a for a in args if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def load_command(name: str) -> click.Command:
    command = importlib.import_module(f"{__name__}.{COMMANDS[name]}").command
    if command.name != name:  # the table and the module must agree
        raise RuntimeError(f"cli/commands/{COMMANDS[name]}.py defines '{command.name}', "
                           f"not '{name}'")
    return command


class LazyGroup(click.Group):
    """A click group whose commands are the COMMANDS table, imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(dict.fromkeys([*COMMANDS, *self.commands]))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            self.add_command(load_command(name))
        return self.commands.get(name)
