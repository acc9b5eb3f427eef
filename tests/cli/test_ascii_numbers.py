"""Every number a user writes on the command line is read in ASCII only (cli/numbers.py).

Python's int() reads '٣' (Arabic-Indic), '３' (fullwidth) and '1_0' as 3, 3 and 10, and
float() reads 'nan' and 'inf': a script building a command from a hostile manifest or URL would
get a silent reinterpretation. The sweep walks every command's options (so an option added
later with a number type is swept too), plus the vocabulary's options that parse numbers out of
their text (TEXT_NUMBERS; a new callback option must be listed there or in NO_NUMBERS), and
wants each hostile spelling refused: exit 2, one line naming the option and the value escaped
(converter/emit/escape.py: '٣' shows as \\u0663), no traceback.
"""
from __future__ import annotations

import json
import math

import click
import pytest
from click.testing import CliRunner

from cli.commands import COMMANDS, load_command
from cli.main import main
from cli.numbers import Decimal, Integer, parse_float, parse_int, parse_number
from cli.option_values import parse_constants, parse_dims, parse_shapes, parse_token_ids
from cli.options import VOCABULARY

# Integers every reader but Python's int() reads differently, or not at all; '+3' is refused
# too (JSON has no '+', a count needs none), while ' 3' is read as 3 (see test_spaces_around).
HOSTILE_INTEGERS = ["\u0663", "\uff13", "\U0001d7d1", "\u00b2", "1_0", "+3", "3\u200b",
                    "\u00a03", "9" * 30]
HOSTILE_FLOATS = ["\uff11.\uff15", "\u0663.5", "1_0.5", "+1.5", "nan", "inf", "-inf",
                  "1e999", "0x10", "1.5\u3000"]

# Vocabulary options whose callback reads numbers out of its text: how a number is written in
# them ({} is the number) and whether the number is an integer.
TEXT_NUMBERS = {
    "dim": ("batch={}", int), "input_shape": ("x=1,{}", int), "prompt": ("1,{},9", int),
    "const": ("x={}", float), "max_tensor_bytes": ("{}MiB", float),
    "max_total_bytes": ("{}MiB", float), "accuracy": ("cosine>={}", float),
}
NO_NUMBERS = {"input", "server"}  # callbacks reading names and paths only


def _numeric_options() -> list[tuple[str, str, type]]:
    """(command, flag, int or float) for every option of a number type, each flag once."""
    found: dict[str, tuple[str, str, type]] = {}
    for name in COMMANDS:
        for param in load_command(name).params:
            if isinstance(param, click.Option) and isinstance(
                    param.type, click.types._NumberParamTypeBase):
                kind = int if isinstance(param.type, click.types.IntParamType) else float
                flag = next(o for o in param.opts if o.startswith("--"))
                found.setdefault(flag, (name, flag, kind))
    return sorted(found.values())


def _text_options() -> list[tuple[str, str, str, type]]:
    """(command, flag, how a number is written, int or float) for TEXT_NUMBERS."""
    from cli.option_table import commands_using

    used = commands_using()
    return [(used[key][0], VOCABULARY[key].long, template, kind)
            for key, (template, kind) in TEXT_NUMBERS.items()]


NUMERIC = _numeric_options()
TEXT = _text_options()


def _cases():
    for command, flag, kind in NUMERIC:
        for value in HOSTILE_INTEGERS if kind is int else HOSTILE_FLOATS:
            yield pytest.param(command, flag, value, value, id=f"{command}{flag}-{value!a}")
    for command, flag, template, kind in TEXT:
        for value in HOSTILE_INTEGERS if kind is int else HOSTILE_FLOATS:
            if kind is float and value in ("nan", "inf", "-inf") and flag == "--const":
                continue  # a constant may be nan or inf (test_const_takes_non_finite_values)
            yield pytest.param(command, flag, template.format(value), value,
                               id=f"{command}{flag}-{value!a}")


@pytest.mark.parametrize("command, flag, given, value", list(_cases()))
def test_a_number_not_written_in_ascii_is_refused(command, flag, given, value):
    result = CliRunner().invoke(main, [command, flag, given])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1, result.output
    assert f"'{flag}'" in error[0]
    assert json.dumps(value)[1:-1] in error[0]  # the value, escaped
    assert result.output.isascii() and "Traceback" not in result.output


def test_the_sweep_covers_every_number_option():
    """The walk finds the options that take numbers (a broken walk would sweep nothing), each
    reads ASCII only, and every vocabulary callback is classified."""
    flags = {flag for _, flag, _ in NUMERIC}
    assert {"--steps", "--cache-capacity", "--seed", "--ulp", "--atol", "--rtol",
            "--block-size", "--samples", "--jobs", "--timeout", "--memory", "--port",
            "--error-growth", "--max-upload-mb", "--job-timeout"} <= flags
    for command, flag, _ in NUMERIC:
        param = next(p for p in load_command(command).params if flag in p.opts)
        assert isinstance(param.type, (Integer, Decimal)), (command, flag, param.type)
    with_callbacks = {key for key, entry in VOCABULARY.items() if "callback" in entry.settings}
    assert with_callbacks == set(TEXT_NUMBERS) | NO_NUMBERS


@pytest.mark.parametrize("text, number", [("3", 3), (" 3", 3), ("3\t", 3), ("-3", -3),
                                          ("007", 7), (str(2**63 - 1), 2**63 - 1)])
def test_ascii_integers_and_spaces_around_them_are_read(text, number):
    assert parse_int(text) == number and type(parse_int(text)) is int


@pytest.mark.parametrize("text", HOSTILE_INTEGERS + ["", "-", "- 3", str(2**63), "3 3"])
def test_parse_int_refuses(text):
    with pytest.raises(ValueError):
        parse_int(text)


@pytest.mark.parametrize("text, number", [("1.5", 1.5), (".5", 0.5), ("1.", 1.0),
                                          ("-2e-3", -2e-3), (" 1E3 ", 1000.0)])
def test_ascii_floats_are_read(text, number):
    assert parse_float(text) == number


@pytest.mark.parametrize("text", HOSTILE_FLOATS + ["", ".", "e3", "1e", "1.5.5"])
def test_parse_float_refuses(text):
    with pytest.raises(ValueError):
        parse_float(text)


def test_const_takes_non_finite_values_and_keeps_integers():
    ctx = click.Context(load_command("convert"))
    known = parse_constants(ctx, None, ["a=nan,inf,-inf", "b=1, -2", "c=1.5"])
    assert [math.isnan(known["a"][0]), known["a"][1], known["a"][2]] == [True, math.inf, -math.inf]
    assert known["b"].dtype.kind == "i" and known["b"].tolist() == [1, -2]
    assert known["c"] == 1.5
    assert parse_number(" 3") == 3 and type(parse_number("3")) is int


def test_spaces_around_a_number_are_read_as_the_number():
    """' 3' is 3 to every reader (JSON, strtol, JavaScript), and lists are written '1, 5, 9':
    spaces and tabs around a number are taken, in options and in lists alike."""
    ctx = click.Context(load_command("convert"))
    assert parse_dims(ctx, None, ["batch= 2", "seq=4, 8"]) == {"batch": 2, "seq": [4, 8]}
    assert parse_shapes(ctx, None, ["x=1, 3"]) == {"x": [1, 3]}
    assert parse_token_ids(ctx, None, "1, 5, 9") == [1, 5, 9]
    steps = next(p for p in load_command("verify").params if p.name == "steps")
    assert steps.type.convert(" 3", steps, ctx) == 3


def _choice_options() -> list[tuple[str, str, tuple]]:
    """(command, flag, its choices) for every option that takes one of a list, each flag once."""
    found: dict[str, tuple[str, str, tuple]] = {}
    for name in COMMANDS:
        for param in load_command(name).params:
            if isinstance(param, click.Option) and isinstance(param.type, click.Choice):
                flag = next(o for o in param.opts if o.startswith("--"))
                found.setdefault(flag, (name, flag, tuple(param.type.choices)))
    return sorted(found.values())


CHOICES = _choice_options()


@pytest.mark.parametrize("command, flag, choices", CHOICES, ids=[c[1] for c in CHOICES])
@pytest.mark.parametrize("shape", ["fullwidth", "bidi", "escape"])
def test_a_choice_not_taken_is_shown_escaped(command, flag, choices, shape):
    """A value like a choice but not one (fullwidth letters read as the choice on a terminal,
    a right-to-left override, a terminal escape) is refused with the value escaped: click's
    own message repeats it with repr(), which keeps printable non-ASCII as is."""
    first = choices[0]
    given = {"fullwidth": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c
                                  for c in first),
             "bidi": "\u202e" + first, "escape": "\x1b[2J" + first}[shape]
    result = CliRunner().invoke(main, [command, flag, given])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and f"'{flag}'" in error[0], result.output
    assert json.dumps(given)[1:-1] in error[0]  # the value, escaped
    assert result.output.isascii() and "Traceback" not in result.output


def test_the_choice_sweep_finds_the_options_and_each_escapes():
    flags = {flag for _, flag, _ in CHOICES}
    assert {"--compute", "--weights", "--io-layout", "--executor", "--source"} <= flags
    from cli.numbers import Choice
    for command, flag, _ in CHOICES:
        param = next(p for p in load_command(command).params if flag in p.opts)
        assert isinstance(param.type, Choice), (command, flag)
