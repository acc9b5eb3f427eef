"""Hostile numbers: every numeric CLI option, a zoo baseline's errors, `zoo --compute`, and a
TFLite LSTM's fused activation code.

  numbers-*      COMMAND --OPTION V for every number-typed option of every command (serve
                 aside: it listens) and the options that read numbers out of their text
                 (tests/cli/test_ascii_numbers.py's TEXT_NUMBERS, e.g. --dim batch=V), with a
                 minimal valid rest (tiny_cnn where a model is needed). V is a valid number
                 mutated so that only a refusal is safe (hostile_number). Safe: exit 2, one error
                 line naming the option, output ASCII only (the value escaped), nothing written.
  baseline-*     zoo sample-zoo.json --baseline B.jsonl --results R, B's maxAbs a hostile
                 number (as a JSON string, or raw where it is no valid JSON, or a digit run too
                 long for a float or for Python's int()): exit 2, one line, R not created.
  compute-*      zoo sample-zoo.json --compute V --target T --results R, T chromium-litert with
                 float16 taken out of every dataTypes: exit 2 before any model runs (V float16:
                 the target takes no float16; V anything else: not a compute type), one line, R
                 not created.
  lstm-act-*     verify of a UNIDIRECTIONAL_SEQUENCE_LSTM whose fusedActivationFunction byte is
                 C (0..255; the schema's field is an int8, so 128..255 read as negatives):
                 C 1..5 exit 0 (passes against LiteRT); 0 (LiteRT's kernel does not apply NONE as
                 the schema says) and C >= 6 exit 2 with one error line.
The CI sample (NUMBERS) holds one value per option, a few baselines, the compute values and
nine activation codes; `python tools/fuzz_numbers.py [--per-option 5] [--baselines 20]
[--codes 20] [--seed 0]` runs a wider sweep alone (other arguments go to tools/fuzz.py: --jobs,
--out, --spawn).
"""
from __future__ import annotations

import json
import random
import re
import sys
import unicodedata
from pathlib import Path

import numpy as np

from fuzz_surfaces import Made

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "models" / "sample-zoo.json"
# Every Unicode decimal digit but ASCII's (Python's int() reads them all), and '²' (which
# isdigit() calls a digit and int() refuses).
OTHER_DIGITS = [c for c in map(chr, range(0x80, sys.maxunicode + 1))
                if unicodedata.category(c) == "Nd"] + ["\u00b2"]
SPACES = ["\u00a0", "\u1680", "\u2000", "\u2007", "\u200a", "\u202f", "\u205f", "\u3000",
          "\u200b", "\ufeff", "\u2060"]  # Unicode spaces, zero-width ones last
# Controls a real argv can hold (no NUL: no exec passes one), tab left out: around a number it
# is read as blank (cli/numbers.py), inside one refused, and the mutation does not know where.
CONTROLS = [chr(c) for c in range(1, 32) if c != 9] + ["\x7f", "\x85", "\x9b", "\u2028",
                                                         "\u202e", "\u2066"]
WORDS = ["nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "0x10", "0X1F", "0x1p-1",
         "0o17", "0b101"]
INT_SEEDS, FLOAT_SEEDS = ["3", "16", "1024", "7"], ["0.5", "1.25", "3", "2.0"]


def hostile_number(rng: random.Random, kind: type) -> str:
    """A valid int (or float) mutated so that cli/numbers.py must refuse it: a digit replaced
    by another script's, '_', '+', a Unicode space or a control inserted, a digit run too
    long for an int64 (or a float64: 310 digits and more before the point), a word."""
    text = rng.choice(INT_SEEDS if kind is int else FLOAT_SEEDS)
    how = rng.choice(["digit", "digit", "insert", "insert", "space", "control", "long", "word"])
    at = rng.randrange(len(text) + 1)
    if how == "digit":
        spots = [i for i, c in enumerate(text) if c.isdigit()]
        i = rng.choice(spots)
        return text[:i] + rng.choice(OTHER_DIGITS) + text[i + 1:]
    if how == "insert":  # '_' between digits, '+' anywhere (no exponent here to take one)
        mark = rng.choice("_+")
        if mark == "_":
            at = rng.randrange(1, len(text)) if len(text) > 1 else 1
        return text[:at] + mark + text[at:]
    if how == "space":
        return text[:at] + rng.choice(SPACES) + text[at:]
    if how == "control":
        return text[:at] + rng.choice(CONTROLS) + text[at:]
    if how == "long":
        run = rng.randint(20, 5000) if kind is int else rng.randint(310, 5000)
        return str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(run - 1))
    return rng.choice(WORDS)


def _lines(out: Path) -> list[str]:
    return "\n".join((out / n).read_text("utf-8", "replace")
                     for n in ("stdout.txt", "stderr.txt")).splitlines()


def refused_cleanly(out: Path, code: int | None, names: str | None = None,
                    ascii_only: bool = False) -> str | None:
    """Why a run that had to be refused was not refused cleanly, or None: exit 2, one error
    line (naming `names` when given), no traceback, nothing but its own output files written
    (tools/fuzz.py checks the same; this judge says it for the case), ASCII only if asked."""
    text = "\n".join(_lines(out))
    if "Traceback (most recent call last)" in text or "internal error" in text:
        return "a traceback or internal error"
    if code != 2:
        return f"exit {code}, not 2"
    errors = [line for line in text.splitlines() if line.lower().startswith("error:")]
    if len(errors) != 1:
        return f"{len(errors)} error lines, not 1"
    if names is not None and f"'{names}'" not in errors[0]:
        return f"the error line does not name {names}"
    if ascii_only and not text.isascii():
        return "output not ASCII only"
    written = sorted(p.name for p in out.iterdir()
                     if p.name not in ("stdout.txt", "stderr.txt", "tmp", "cache"))
    return f"wrote {written[:5]}" if written else None


# -- numeric options -----------------------------------------------------------------------------
def number_options(every_command: bool = True) -> list[tuple[str, str, str, type]]:
    """(command, flag, template, int or float): every number-typed option of every command but
    serve (template "{}"; of each flag only its first command unless `every_command`), then
    TEXT_NUMBERS on the first command that takes each."""
    import click

    from cli.commands import COMMANDS, load_command
    from cli.option_table import commands_using
    from cli.options import VOCABULARY
    if str(ROOT) not in sys.path:  # TEXT_NUMBERS is kept whole by that test's own check
        sys.path.insert(0, str(ROOT))
    from tests.cli.test_ascii_numbers import TEXT_NUMBERS

    found = []
    for name in COMMANDS:
        if name == "serve":
            continue
        for param in load_command(name).params:
            if isinstance(param, click.Option) and isinstance(
                    param.type, click.types._NumberParamTypeBase):
                kind = int if isinstance(param.type, click.types.IntParamType) else float
                flag = next(o for o in param.opts if o.startswith("--"))
                if every_command or all(flag != f for _, f, _, _ in found):
                    found.append((name, flag, "{}", kind))
    used = commands_using()
    found += [(used[key][0], VOCABULARY[key].long, template, kind)
              for key, (template, kind) in TEXT_NUMBERS.items()]
    return found


# The rest of each command: its entry (copied from models/) and the arguments after it.
_REST = {"convert": ("tiny_cnn.onnx", ["-o", "{out}/o.webnn"]), "verify": ("tiny_cnn.onnx", []),
         "check": ("tiny_cnn.onnx", []), "run": ("tiny_cnn.webnn", []),
         "zoo": (None, ["--results", "{out}/r.jsonl"])}


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")  # fuzz.py formats each argument


def number_option(command: str, flag: str, value: str):
    def make(folder: Path, root: Path) -> Made:
        entry_name, rest = _REST[command]
        if entry_name is None:
            entry = ZOO
        else:
            entry = folder / entry_name
            for suffix in ((".webnn", ".manifest.json", ".weights")
                           if entry_name.endswith(".webnn") else (".onnx",)):
                (folder / f"tiny_cnn{suffix}").write_bytes(
                    (ROOT / "models" / f"tiny_cnn{suffix}").read_bytes())
        args = [*rest, flag, _braces(value)]
        return Made(entry, {command: (args, [])}, must_refuse=True,
                    outcome=lambda out, code: refused_cleanly(out, code, flag, ascii_only=True))
    return make


def number_cases(per_option: int, seed: int, every_command: bool = True
                 ) -> list[tuple[str, object]]:
    rng = random.Random(seed)
    cases = []
    for command, flag, template, kind in number_options(every_command):
        for index in range(per_option):
            value = hostile_number(rng, kind)
            if flag == "--const" and value.lstrip("-").lower() in ("nan", "inf", "infinity"):
                value = "1_0"  # a constant may be nan or inf (test_const_takes_non_finite...)
            cases.append((f"numbers-{command}{flag}-{index}",
                          number_option(command, flag, template.format(value))))
    return cases


# -- zoo --baseline ------------------------------------------------------------------------------
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def baseline(value: str, raw: bool):
    """A results file of one record, tiny_cnn's maxAbs `value`: a JSON string (never one a
    run writes: inf, -inf, nan), or written raw. Raw, a value that is a JSON number is a
    digit run float64 cannot hold, or Python's int() cannot read (past 4300 digits)."""
    def make(folder: Path, root: Path) -> Made:
        if not raw and value in ("inf", "-inf", "nan"):
            raise ValueError(f"{value} is a maxAbs a run writes")
        if raw and _JSON_NUMBER.fullmatch(value) and abs(float(value)) < 1e308:
            raise ValueError(f"{value} is a valid maxAbs")
        number = value if raw else json.dumps(value)
        entry = folder / "b.jsonl"
        entry.write_text(
            '{"result": {"id": "tiny_cnn", "status": "verified", "targets": [{"target": '
            '"portable", "parity": {"ort": {"outputs": [{"name": "y", "maxAbs": %s}]}}}]}}\n'
            % number, "utf-8")
        args = [str(ZOO), "--baseline", str(entry), "--results", "{out}/r.jsonl"]
        return Made(entry, {"zoo": (args, [])}, must_refuse=True, entry_arg=False,
                    outcome=lambda out, code: refused_cleanly(out, code))
    return make


def baseline_cases(count: int, seed: int) -> list[tuple[str, object]]:
    rng = random.Random(seed)
    cases = [("baseline-int-5000-digits", baseline("9" * 5000, raw=True)),
             ("baseline-int-400-digits", baseline("9" * 400, raw=True))]
    for index in range(count):
        value = hostile_number(rng, float)
        raw = bool(_JSON_NUMBER.fullmatch(value)) or value in ("inf", "-inf", "nan") or \
            rng.random() < 0.5
        cases.append((f"baseline-{'raw' if raw else 'string'}-{index}", baseline(value, raw)))
    return cases


# -- zoo --compute -------------------------------------------------------------------------------
def _without_float16(document):
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "dataTypes" and isinstance(value, list):
                value[:] = [t for t in value if t != "float16"]
            else:
                _without_float16(value)
    elif isinstance(document, list):
        for value in document:
            _without_float16(value)
    return document


def compute(value: str):
    def make(folder: Path, root: Path) -> Made:
        target = folder / "no-float16.json"
        source = ROOT / "converter" / "targets" / "data" / "chromium-litert.json"
        target.write_text(json.dumps(_without_float16(json.loads(source.read_text()))))
        args = [str(ZOO), "--compute", _braces(value), "--target", str(target),
                "--results", "{out}/r.jsonl"]
        return Made(target, {"zoo": (args, [])}, must_refuse=True, entry_arg=False,
                    outcome=lambda out, code: refused_cleanly(out, code))
    return make


# NUL: main(argv) takes it (tools/fuzz.py runs it so even under --spawn, as no exec can).
COMPUTE_VALUES = [("float16", "float16"), ("float64", "float64"), ("upper", "FLOAT16"),
                  ("nul", "float16\x00"), ("fullwidth", "\uff46\uff4c\uff4f\uff41\uff54\uff11"
                                                       "\uff16"), ("empty", "")]


# -- TFLite LSTM fused activation ----------------------------------------------------------------
def _lstm(code: int) -> bytes:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM (batch 2, 3 steps, 4 in, 5 units, zero state) whose
    options byte fusedActivationFunction is `code` (0..255, written as the int8 it is)."""
    from converter.testing.tflite_fixtures import Const, Input, Output, Variable, one_op

    batch, steps, size, units = 2, 3, 4, 5
    rng = np.random.default_rng(code)

    def values(*shape):
        return rng.uniform(-0.5, 0.5, shape).astype(np.float32)
    inputs = [Input("x", [batch, steps, size]),
              *[Const(values(units, size), name=f"w_{g}") for g in "ifco"],
              *[Const(values(units, units), name=f"r_{g}") for g in "ifco"], None, None, None,
              *[Const(values(units), name=f"b_{g}") for g in "ifco"], None, None,
              Variable([batch, units], name="h"), Variable([batch, units], name="c"),
              None, None, None, None]
    return one_op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [Output("y", [batch, steps, units])],
                  fusedActivationFunction=code - 256 if code >= 128 else code, timeMajor=False,
                  cellClip=0.0, projClip=0.0)


def lstm_activation(code: int):
    def make(folder: Path, root: Path) -> Made:
        entry = folder / "lstm.tflite"
        entry.write_bytes(_lstm(code))
        applied = 1 <= code <= 5

        def outcome(out: Path, exit_code: int | None) -> str | None:
            if not applied:
                return refused_cleanly(out, exit_code)
            text = "\n".join(_lines(out))
            if "Traceback (most recent call last)" in text or "internal error" in text:
                return "a traceback or internal error"
            return None if exit_code == 0 else f"exit {exit_code}, not 0"
        return Made(entry, {"verify": ([], [])}, must_refuse=not applied, outcome=outcome)
    return make


def lstm_codes(count: int, seed: int) -> list[int]:
    """0..6 always, then `count` codes drawn from 7..255."""
    rng = random.Random(seed)
    return list(range(7)) + sorted(rng.sample(range(7, 256), count))


def cases(per_option: int, baselines: int, codes: int, seed: int, every_command: bool = True
          ) -> list[tuple[str, object]]:
    return [*number_cases(per_option, seed, every_command), *baseline_cases(baselines, seed),
            *[(f"compute-{name}", compute(value)) for name, value in COMPUTE_VALUES],
            *[(f"lstm-act-{code}", lstm_activation(code)) for code in lstm_codes(codes, seed)]]


# The CI sample's share: each flag once, a few baselines, every compute value, nine codes.
NUMBERS = cases(per_option=1, baselines=3, codes=2, seed=0, every_command=False)


def main(argv: list[str] | None = None) -> int:
    """The wider sweep: these cases alone through tools/fuzz.py (its --out, --jobs, --spawn)."""
    import argparse

    import fuzz
    import fuzz_corpus

    parser = argparse.ArgumentParser(description="hostile numbers through tools/fuzz.py")
    parser.add_argument("--per-option", type=int, default=5)
    parser.add_argument("--baselines", type=int, default=20)
    parser.add_argument("--codes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args, rest = parser.parse_known_args(argv)
    made = cases(args.per_option, args.baselines, args.codes, args.seed)
    fuzz_corpus.HOSTILE[:] = made
    return fuzz.main(["--count", str(len(made)), "--no-mutations", "--seed", str(args.seed),
                      *rest])


if __name__ == "__main__":
    sys.exit(main())
