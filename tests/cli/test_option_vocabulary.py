"""Issue 27: one option vocabulary. Every command takes its shared options from cli/options.py,
so an option reads, defaults and shows alike everywhere; these tests walk the real commands and
fail on any drift (a command defining `--seed` or `-t` its own way, a help text edited in one
command only, an option two commands take that the vocabulary does not define)."""
from __future__ import annotations

import re

import click
import pytest

from cli.commands import COMMANDS, load_command
from cli.main import main
from cli.option_table import commands_using, options_table_markdown
from cli.options import VERIFYING, VOCABULARY

ALL = [("webnn-convert", main)] + [(name, load_command(name)) for name in COMMANDS]
BY_LONG = {entry.long: key for key, entry in VOCABULARY.items()}


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)
            and not p.name == "help"]


def _expected(key: str, repeat: bool) -> click.Option:
    """The option as the vocabulary defines it, built on its own."""
    holder = VOCABULARY[key].option(repeat)(lambda **_: None)
    (option,) = holder.__click_params__
    return option


def _shared_uses():
    for name, command in ALL:
        for option in _options(command):
            key = next((BY_LONG[o] for o in option.opts if o in BY_LONG), None)
            if key is not None:
                yield name, key, option


@pytest.mark.parametrize("name,key,option", list(_shared_uses()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_a_shared_option_is_the_vocabularys_in_every_command(name, key, option):
    entry = VOCABULARY[key]
    if option.multiple and not _expected(key, False).multiple:
        assert name in entry.repeatable_in, f"{name} takes {entry.long} repeatedly"
    want = _expected(key, option.multiple and name in entry.repeatable_in)
    got_info, want_info = option.to_info_dict(), want.to_info_dict()
    assert got_info == want_info  # flags, parameter name, type, default, help, flag-ness
    assert option.metavar == want.metavar and option.show_default == want.show_default
    assert option.callback is want.callback and option.expose_value == want.expose_value


def test_an_option_several_commands_take_is_in_the_vocabulary():
    takers: dict[str, set[str]] = {}
    longs_of_short: dict[str, set[str]] = {}
    for name, command in ALL:
        for option in _options(command):
            long = max(option.opts, key=len)
            takers.setdefault(long, set()).add(name)
            for short in (o for o in option.opts if not o.startswith("--")):
                longs_of_short.setdefault(short, set()).add(long)
    shared = {long for long, names in takers.items() if len(names) > 1}
    assert shared - set(BY_LONG) == set(), "define these once in cli/options.py"
    # a short flag means one thing everywhere (-t is --target, -v --verbose ...)
    assert {s: longs for s, longs in longs_of_short.items() if len(longs) > 1} == {}
    assert longs_of_short["-t"] == {"--target"}


def test_every_vocabulary_option_is_taken_somewhere():
    assert [key for key, names in commands_using().items() if not names] == []


@pytest.mark.parametrize("name,command", ALL, ids=[n for n, _ in ALL])
def test_prompt_is_offered_only_beside_steps(name, command):
    flags = {o for option in _options(command) for o in option.opts}
    assert ("--prompt" in flags) == ("--steps" in flags)


def test_convert_takes_every_option_verify_takes():
    verify = {max(o.opts, key=len) for o in _options(load_command("verify"))}
    convert = {max(o.opts, key=len) for o in _options(load_command("convert"))}
    # --graph names a graph converted earlier: convert makes its own
    assert verify - convert == {"--graph"}
    assert {VOCABULARY[k].long for k in VERIFYING} <= convert


def test_the_shared_options_are_where_the_issue_asks():
    used = commands_using()
    assert "zoo" in used["target"] and "inspect" in used["target"]
    assert {"run", "validate", "zoo", "convert", "verify"} <= set(used["json"])
    assert {"run", "verify", "convert"} <= set(used["inputs"])
    assert set(used["prompt"]) == set(used["steps"]) == {"convert", "verify", "run"}
    assert used["debug"] == ["webnn-convert"]


def test_the_options_table_lists_every_shared_option_with_its_commands():
    table = options_table_markdown()
    lines = table.splitlines()
    assert lines[0] == "| option | meaning | commands |"
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in lines[2:]]
    assert len(rows) == len(VOCABULARY)
    used = commands_using()
    for (key, entry), (flags, meaning, commands) in zip(VOCABULARY.items(), rows):
        for flag in entry.flags:
            assert f"`{flag}`" in flags
        assert meaning.strip().replace("\\|", "|") == entry.help
        listed = [c.strip() for c in commands.split(",")]
        if key in VERIFYING:  # what convert takes for its --verify
            assert "convert --verify" in listed
        assert [c.removesuffix(" --verify") for c in listed] == used[key]


def test_the_output_suffixes_in_the_help_are_the_writers():
    from converter.conversion.by_suffix import OUTPUT_SUFFIXES

    assert all(s in VOCABULARY["output"].help for s in OUTPUT_SUFFIXES)


def test_the_vocabularys_runtimes_are_the_zoos():
    from converter.zoo.runner import RUNTIMES

    assert tuple(VOCABULARY["runtime"].settings["type"].choices) == RUNTIMES
