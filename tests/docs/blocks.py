"""The command blocks of README.md and docs/, found and run as a reader would run them.

A command block is a fenced block whose language is `console`, `sh` or `python`:

- `console`: lines starting with `$ ` are commands (a line ending in `\\` continues on the
  next); the lines after a command, up to the next one, are the output it must print
  (stdout and stderr as one stream). In that output a line that is just `...` stands for any
  number of lines, and `...` inside a line for any text (timings, paths, error digits that
  move with the machine). A command must exit 0: a block that shows a failure ends its
  command with `; echo "exit $?"` and shows the status.
- `sh`: every line is a command (continuations as above, `#` comments skipped); only the exit
  status is checked.
- `python`: the block is one script (the Python API's examples), run with this interpreter; it
  must exit 0, so a block checks what it shows with `assert`.

A block preceded by `<!-- not-run: REASON -->` (on the line before its fence) is not run; the
tests count such blocks per file, so they cannot grow silently. Other shell languages
(`bash`, `shell`, ...) are refused, so that no command block escapes the tests by its tag.

The commands run with bash in a temporary folder holding a copy of the repository's
`models/`, with `webnn-convert`, `python` and `python3` on PATH meaning this checkout and this
interpreter. The blocks of one file run in order in one folder, so a later block can use what
an earlier one wrote. The README's install prefix (`python3 -m venv .venv && . .venv/bin/activate
&& pip install ... &&`) is left out: the environment the tests run in is that install.
"""
from __future__ import annotations

import difflib
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_LANGUAGES = ("console", "sh", "python")
REFUSED_LANGUAGES = ("bash", "shell", "zsh", "shell-session", "shellsession", "terminal")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<lang>[^`\s]*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
_INSTALL_PREFIX = re.compile(
    r"^python3 -m venv \.venv && \. \.venv/bin/activate && pip install -q -e \S+ && ")
ELLIPSIS = "..."


class BlockError(Exception):
    """A block that is malformed, or whose command failed or printed other output."""


@dataclass
class Command:
    line: int               # 1-based line of the `$` in its file
    text: str               # the command, continuations joined
    expected: list[str] | None   # None: output not checked (`sh` and `python` blocks)
    python: bool = False    # a Python script, not a shell command


@dataclass
class Block:
    path: Path
    line: int               # 1-based line of the opening fence
    language: str
    body: list[str]
    not_run: str | None = None      # the reason, when marked not-run
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def documented_files() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks_of(path: Path, text: str | None = None) -> list[Block]:
    """The command blocks of one Markdown file, each with its commands parsed."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m["fence"], m["lang"].lower()
        end = i + 1
        while end < len(lines) and not re.match(rf"^ {{0,3}}{fence}`*\s*$", lines[end]):
            end += 1
        if end == len(lines):
            raise BlockError(f"{path}:{i + 1}: fence never closed")
        body = lines[i + 1:end]
        if lang in REFUSED_LANGUAGES:
            raise BlockError(f"{path}:{i + 1}: a `{lang}` block: tag command blocks `console` "
                             f"(with `$ ` prompts and their output) or `sh` (commands only)")
        if lang == "" and any(s.lstrip().startswith(("$ ", "webnn-convert ")) for s in body):
            raise BlockError(f"{path}:{i + 1}: an untagged block of commands: tag it `console` "
                             f"or `sh` so that it runs as a test")
        if lang in COMMAND_LANGUAGES:
            before = lines[i - 1] if i > 0 else ""
            marker = _NOT_RUN.match(before)
            block = Block(path, i + 1, lang, body, marker["reason"] if marker else None)
            if marker is not None and not block.not_run:
                raise BlockError(f"{path}:{i}: a not-run marker must give its reason")
            block.commands = _commands(block)
            blocks.append(block)
        i = end + 1
    return blocks


def _commands(block: Block) -> list[Command]:
    if block.language == "python":
        if not any(s.strip() for s in block.body):
            raise BlockError(f"{block.where}: an empty python block")
        return [Command(block.line + 1, "\n".join(block.body), None, python=True)]
    commands: list[Command] = []
    body = block.body
    j = 0
    while j < len(body):
        raw = body[j]
        if block.language == "console" and not raw.startswith("$ "):
            if not commands:
                raise BlockError(f"{block.where}: a console block must start with a `$ ` command")
            commands[-1].expected.append(raw)
            j += 1
            continue
        if block.language == "sh" and (not raw.strip() or raw.lstrip().startswith("#")):
            j += 1
            continue
        start = j
        text = raw[2:] if block.language == "console" else raw
        while text.endswith("\\") and j + 1 < len(body):
            j += 1
            text = text[:-1] + "\n" + body[j]
        commands.append(Command(block.line + 1 + start, text,
                                [] if block.language == "console" else None))
        j += 1
    if not commands:
        raise BlockError(f"{block.where}: a command block with no command")
    return commands


def output_matches(expected: list[str], actual: str) -> bool:
    """Whether `actual` is what `expected` shows, `...` lines and `...` in lines eliding."""
    parts = []
    for line in _trimmed(expected):
        if line.strip() == ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split(ELLIPSIS)) + r"\n")
    text = "".join(s.rstrip() + "\n" for s in _trimmed(actual.splitlines()))
    return re.fullmatch("".join(parts), text) is not None


def _trimmed(lines: list[str]) -> list[str]:
    lines = [s.rstrip() for s in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def workspace(folder: Path) -> dict[str, str]:
    """Lay out `folder` as a reader's checkout (a copy of models/) and return the environment
    whose `webnn-convert`, `python` and `python3` are this checkout's and this interpreter."""
    shutil.copytree(ROOT / "models", folder / "models",
                    ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = folder.parent / f"{folder.name}-bin"
    bin_dir.mkdir()
    scripts = {
        "webnn-convert": f'exec "{sys.executable}" -c "import sys; sys.argv[0] = \'webnn-convert\'; '
                         f'from cli.script import run; run()" "$@"',
        "python": f'exec "{sys.executable}" "$@"',
        "python3": f'exec "{sys.executable}" "$@"',
    }
    for name, body in scripts.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name in ("COLUMNS", "LINES", "FORCE_COLOR", "PYTEST_XDIST_WORKER"):
        env.pop(name, None)
    env["NO_COLOR"] = "1"
    # The zoo keeps its results in the cache: the tests' runs go to a folder of their own.
    env["WEBNN_CONVERTER_CACHE"] = str(folder.parent / f"{folder.name}-cache")
    env["TERM"] = "dumb"
    return env


def run_command(command: Command, where: str, folder: Path, env: dict[str, str],
                timeout: float = 600) -> None:
    """Run one documented command in `folder`; raise BlockError on a non-zero exit or on
    output other than the one shown."""
    argv = ([sys.executable, "-c", command.text] if command.python
            else ["bash", "-c", _INSTALL_PREFIX.sub("", command.text)])
    proc = subprocess.run(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        shown = "the python block" if command.python else f"`{command.text}`"
        raise BlockError(f"{where}: {shown} exited {proc.returncode}:\n{proc.stdout}")
    if command.expected is not None and not output_matches(command.expected, proc.stdout):
        diff = "\n".join(difflib.unified_diff(_trimmed(command.expected),
                                              _trimmed(proc.stdout.splitlines()),
                                              "documented", "printed", lineterm=""))
        raise BlockError(f"{where}: `{command.text}` printed other output than the docs show:\n"
                         f"{diff}")
