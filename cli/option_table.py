"""Which commands take each option of the vocabulary (cli/options.py), and the table of them
(option | meaning | commands) the documentation includes, both walked from the command group
itself. Kept apart from options.py, which every command and the group import, because walking
the commands imports them and the group: here nothing the commands import imports back."""
from __future__ import annotations

import click

from .options import VERIFYING, VOCABULARY

__all__ = ["commands_using", "options_table_markdown"]


def commands_using() -> dict[str, list[str]]:
    """Vocabulary key -> the names of the commands (and `webnn-convert` itself, for the
    group's options) that take it, found by walking the commands."""
    from .commands import COMMANDS, load_command
    from .main import main

    by_flag = {entry.long: key for key, entry in VOCABULARY.items()}
    found: dict[str, list[str]] = {key: [] for key in VOCABULARY}
    commands = [("webnn-convert", main)] + [(n, load_command(n)) for n in COMMANDS]
    for name, command in commands:
        for param in command.params:
            key = next((by_flag[o] for o in getattr(param, "opts", ()) if o in by_flag), None)
            if key is not None:
                found[key].append(name)
    return found


def options_table_markdown() -> str:
    """The vocabulary as a Markdown table: option | meaning | commands. An option convert
    takes for its --verify is listed as `convert --verify`."""
    used = commands_using()
    rows = ["| option | meaning | commands |", "| --- | --- | --- |"]
    for key, entry in VOCABULARY.items():
        flags = ", ".join(f"`{f}`" for f in sorted(entry.flags, key=len))
        kind = entry.settings.get("type")
        value = entry.settings.get("metavar") or (
            "|".join(kind.choices) if isinstance(kind, click.Choice) else None)
        if value:
            flags += f" `{value}`"
        meaning = entry.help.replace("|", "\\|")
        commands = [f"{name} --verify" if name == "convert" and key in VERIFYING else name
                    for name in used[key]]
        rows.append(f"| {flags.replace('|', chr(92) + '|')} | {meaning} | "
                    f"{', '.join(commands) or '-'} |")
    return "\n".join(rows) + "\n"
