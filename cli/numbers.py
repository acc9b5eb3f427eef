"""Numbers the user writes on the command line, read the way every other tool reads them.

Python's int() and float() (which click's INT and FLOAT types use) accept any Unicode decimal
digit ('٣' Arabic-Indic, '３' fullwidth, '𝟑' mathematical) and '_' between digits ('1_0' is 10),
and float() accepts 'nan' and 'inf'. A script that builds a command from a hostile manifest or
URL would then get a silent reinterpretation: a shell, JSON, C's strtol or JavaScript read
'1_0' as 1 or not at all, and a reviewer reading '٣' on a terminal may see another digit. So an
integer here is `-?[0-9]+` in ASCII, with spaces or tabs around it allowed (every reader takes
' 3' as 3, and lists are written '1, 5, 9'); a '+' sign is refused (JSON has none, and a count
needs none). A float is the same digits with an optional fraction and exponent ('1.5', '.5',
'1e-3') and must be finite ('1e999' too), unless the caller takes 'nan' and 'inf' spelt so
(--const). Anything else is refused with one line naming the value, escaped so that it shows
as written (converter/emit/escape.py), and click exits 2.
"""
from __future__ import annotations

import math
import re

import click

from converter.emit.escape import js_string

__all__ = ["Integer", "Decimal", "Choice", "parse_int", "parse_float", "parse_number", "quoted",
           "INT64_MAX"]

_BLANKS = " \t"
_INTEGER = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_NON_FINITE = re.compile(r"nan|-?inf(?:inity)?", re.IGNORECASE)
# No option means more than an int64 holds (a count, a size, a seed, a token id); a longer
# value is a mistake, and Python's int() refuses beyond 4300 digits with a traceback-bound error.
INT64_MAX = (1 << 63) - 1


def quoted(text: str) -> str:
    """`text` quoted for a terminal line with every non-ASCII or control character escaped
    ('٣' shows as "\\u0663", not as a digit that looks like another), at most 80 of them."""
    return js_string(str(text)[:80] + ("..." if len(str(text)) > 80 else ""))


def parse_int(text: str, negative: bool = True) -> int:
    """The integer `text` spells in ASCII digits (with a leading '-' only when `negative`);
    a ValueError saying what is wrong otherwise."""
    digits = text.strip(_BLANKS)
    if not _INTEGER.fullmatch(digits):
        kind = "an integer" if negative else "a whole number"
        raise ValueError(f"{quoted(text)} is not {kind} written in ASCII digits 0-9")
    if digits.startswith("-") and not negative:
        raise ValueError(f"{quoted(text)} is negative: give 0 or more")
    if len(digits.lstrip("-")) > 19 or abs(int(digits)) > INT64_MAX:
        raise ValueError(f"{quoted(text)} is out of range (at most {INT64_MAX}, in at most 19 "
                         f"digits)")
    return int(digits)


def parse_float(text: str, finite: bool = True) -> float:
    """The number `text` spells in ASCII (digits, '.', an exponent); 'nan' and 'inf' too when
    not `finite`. A ValueError saying what is wrong otherwise."""
    number = text.strip(_BLANKS)
    if _NON_FINITE.fullmatch(number):
        if finite:
            raise ValueError(f"{quoted(text)} is not a finite number")
        return float(number)
    if not _FLOAT.fullmatch(number):
        raise ValueError(f"{quoted(text)} is not a number written in ASCII (digits 0-9, '.', "
                         f"an exponent e.g. 1e-3)")
    value = float(number)
    if not math.isfinite(value):  # '1e999': written as a number, read as inf
        raise ValueError(f"{quoted(text)} is too large for a float64")
    return value


def parse_number(text: str, finite: bool = True) -> int | float:
    """An int when `text` spells an integer (parse_int), else a float (parse_float): '3' is 3,
    '3.0' and '1e3' are floats; an integer too large for an int64 is refused, not rounded."""
    if _INTEGER.fullmatch(text.strip(_BLANKS)):
        return parse_int(text)
    return parse_float(text, finite)


def _read(kind, value, param, ctx, parse):
    """`value` read by `parse` where it is text (a refusal is click's one-line failure); a
    default or a value from Python passes as it is."""
    if isinstance(value, str):
        try:
            return parse(value)
        except ValueError as e:
            kind.fail(str(e), param, ctx)
    return value


class Integer(click.IntRange):
    """click.IntRange (bounds optional) that reads only ASCII digits (see the module's
    docstring); IntRange then checks the bounds."""

    name = "integer"

    def convert(self, value, param, ctx):
        return super().convert(_read(self, value, param, ctx, parse_int), param, ctx)


class Decimal(click.FloatRange):
    """click.FloatRange (bounds optional) that reads only ASCII numbers and only finite ones."""

    name = "float"

    def convert(self, value, param, ctx):
        value = _read(self, value, param, ctx, parse_float)
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(f"{value} is not a finite number", param, ctx)
        return super().convert(value, param, ctx)


class Choice(click.Choice):
    """click.Choice whose refusal shows the value escaped: click repeats it with repr(), which
    keeps printable non-ASCII as is, so 'ｆｌｏａｔ１６' (fullwidth) would read on a terminal as
    the float16 it was refused for being."""

    def get_invalid_choice_message(self, value, ctx) -> str:
        choices = ", ".join(quoted(c) for c in self.choices)
        return f"{quoted(value)} is not one of {choices}"
