"""Model strings reach the terminal only as visible text (cli/terminal.py).

A hostile model's node, tensor and graph names, its domain, and a hostile file name hold an
OSC 52 (clipboard write), an OSC 0 (window title), a CSI clear-screen, a newline and a carriage
return forging a line of our own, a bidi override, rich markup, the line separator, a C1 CSI
and DEL. Every command that prints is run on it as a real process, piped and on a
pseudo-terminal (where rich lays out, colours and animates): no control byte but the tool's own
line breaks (and, on the terminal, rich's own colour and cursor sequences) reaches the output,
the name is printed in its escaped form, and `--json` gives it back exactly.
"""
from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from cli.terminal import echo_traceback, shortened, shown

from .terminal_run import ROOT, run_on_terminal, run_piped

PAYLOAD = ("\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2J\nforged: valid\r\u202e[bold]b[/]"
           "\u2028\x9b31m\x7f")
IN_A_FILE_NAME = PAYLOAD.replace("/", "|")  # all but the path separator

# What a terminal acts on or hides: C0, DEL, C1, bidi controls, line/paragraph separators,
# lone surrogates. The tool's own line breaks are the only ones allowed through.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                    "\u2066-\u2069\ud800-\udfff]")
# What rich itself writes on a terminal: colours, hiding and showing the cursor, erasing the
# live line and moving up to it.
RICH_OWN = re.compile(r"\x1b\[(?:[0-9;]*m|\?25[lh]|2K|1A)|\r(?=\x1b\[(?:2K|1A))")


def _model(path: Path, unknown_domain: bool = False) -> Path:
    """abs of an int8 input (several targets refuse int8 there and no pass fixes it: `check`
    names it after the passes), every name hostile; or one node of an unknown, hostile domain (every command refuses it)."""
    x = helper.make_tensor_value_info("in" + PAYLOAD, TensorProto.INT8, [2, 3])
    y = helper.make_tensor_value_info("out" + PAYLOAD, TensorProto.INT8, [2, 3])
    opsets = [helper.make_opsetid("", 17)]
    if unknown_domain:
        node = helper.make_node("Evil", [x.name], [y.name], name="node" + PAYLOAD,
                                domain="dom" + PAYLOAD)
        opsets.append(helper.make_opsetid("dom" + PAYLOAD, 1))
    else:
        node = helper.make_node("Abs", [x.name], [y.name], name="node" + PAYLOAD)
    graph = helper.make_graph([node], "graph" + PAYLOAD, [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    return path


def _graph_file(path: Path) -> Path:
    """A WebNN graph (.json) of two gathers whose names are all hostile and whose shared
    constant index is out of range for both: `validate` lists two problems naming them."""
    import numpy as np

    import converter

    b = converter.GraphBuilder("graph" + PAYLOAD)
    x = b.input("in" + PAYLOAD, "float32", [3, 4])
    index = b.constant(np.array([0, 2], np.int64), name="index" + PAYLOAD)
    graph = b.build({"y" + PAYLOAD: b.gather(x, index, axis=0, name="first" + PAYLOAD),
                     "z" + PAYLOAD: b.gather(x, index, axis=1, name="second" + PAYLOAD)})
    converter.save(graph, path)
    weights = path.with_suffix(".weights")
    data = bytearray(weights.read_bytes())
    data[8:24] = np.array([9, 0], np.int64).tobytes()  # the one tensor, after the header
    weights.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile_names")
    _model(root / "names.onnx")
    _graph_file(root / "graph.json")
    _model(root / "domain.onnx", unknown_domain=True)
    shutil.copy(root / "names.onnx", root / f"m{IN_A_FILE_NAME}.onnx")
    (root / f"d{IN_A_FILE_NAME}").mkdir()
    shutil.copy(root / "domain.onnx", root / f"z{IN_A_FILE_NAME}.onnx")
    (root / "zoo.json").write_text(json.dumps({"models": [
        {"id": "evil", "path": f"z{IN_A_FILE_NAME}.onnx", "expect": "verified"}]}))
    # A path the manifest's rules let through, to a model whose names are the payload.
    (root / "zoo-run.json").write_text(json.dumps({"models": [
        {"id": "evil", "path": "domain.onnx", "expect": "verified"}]}))
    return root


# (arguments, exit status, the hostile text the output names, escaped)
CASES = {
    "inspect": (["inspect", "names.onnx"], 0, PAYLOAD),
    "validate": (["validate", "domain.onnx"], 1, PAYLOAD),
    "validate-list": (["validate", "graph.json"], 1, PAYLOAD),
    "validate-file-name": (["validate", f"m{IN_A_FILE_NAME}.onnx"], 0, IN_A_FILE_NAME),
    "convert-error": (["convert", "domain.onnx", "-o", "out.webnn"], 2, PAYLOAD),
    "convert-debug": (["--debug", "convert", "domain.onnx", "-o", "out.webnn"], 2, PAYLOAD),
    "click-error": (["inspect", f"d{IN_A_FILE_NAME}"], 2, IN_A_FILE_NAME),
    "verify": (["verify", "names.onnx"], 0, PAYLOAD),
    "check": (["check", "names.onnx"], 1, PAYLOAD),
    "check-target": (["check", "names.onnx", "--target", "coreml"], 1, PAYLOAD),
    "run": (["run", "names.onnx", "--output-dir", "run_out"], 0, PAYLOAD),
    "ops": (["ops"], 0, None),
    # the manifest names a path with control characters: refused before any job, shown inert
    "zoo": (["zoo", "zoo.json", "--results", "zoo.jsonl"], 2, None),
    "zoo-run": (["zoo", "zoo-run.json", "--results", "zoo-run.jsonl"], 1, None),
}


def _assert_inert(out: bytes, on_terminal: bool, named: str | None) -> None:
    for sequence in (b"\x1b]", b"\x07", b"\x1b[2J", b"\x9b", "\u202e".encode()):
        assert sequence not in out, (sequence, out[:2000])
    text = out.decode("utf-8", "surrogateescape")
    if on_terminal:
        text = RICH_OWN.sub("", text)
    left = UNSAFE.findall(text)
    assert not left, (left[:5], text[:2000])
    assert not any(line.startswith("forged") for line in text.splitlines())
    if named is not None:  # printed, visibly: no markup read, nothing dropped
        assert shown(named) in text, text[:3000]


@pytest.mark.parametrize("on_terminal", [False, True], ids=["piped", "terminal"])
@pytest.mark.parametrize("case", CASES)
def test_no_model_string_acts_on_the_terminal(folder, case, on_terminal):
    args, status, named = CASES[case]
    if on_terminal:  # wide enough that rich wraps no name: the whole escape is checked
        code, out = run_on_terminal(args, folder, columns=1000)
    else:
        code, out = run_piped(args, folder)
    assert code == status, out[-2000:]
    _assert_inert(out, on_terminal, named)


def test_a_narrow_terminal_wraps_names_inert(folder):
    code, out = run_on_terminal(["check", "names.onnx"], folder, columns=60)
    assert code == 1
    _assert_inert(out, True, None)
    assert b"\\x1b]52;c;" in out


def test_json_gives_every_name_back_exactly(folder):
    code, out = run_piped(["inspect", "--json", "names.onnx"], folder)
    assert code == 0
    assert out.isascii()  # every control and bidi character a \u escape
    info = json.loads(out)
    assert info["name"] == "graph" + PAYLOAD
    assert list(info["inputs"]) == ["in" + PAYLOAD]
    assert list(info["outputs"]) == ["out" + PAYLOAD]


# Every character `shown` replaces, one of each kind and every C0/C1 control.
_ESCAPED = ([chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xa0)]
            + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029", "\u202a", "\u202b", "\u202c",
               "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\ud800", "\udfff"])


@pytest.mark.parametrize("char", _ESCAPED, ids=lambda c: f"U+{ord(c):04X}")
def test_shown_escapes_each_control_visibly(char):
    out = shown(f"a{char}b")
    assert out.startswith("a\\") and out.endswith("b") and len(out) > 3
    assert out.isascii() and out.isprintable()
    assert shown(out) == out  # once escaped, printed as it is


def test_shown_names_the_usual_ones_and_keeps_the_rest():
    assert shown("a\nb\rc\td\x1be\x9bf\u202eg") == "a\\nb\\rc\\td\\x1be\\x9bf\\u202eg"
    kept = "plain ASCII [bold] \\x1b, é, 名前, ünïcödé, emoji \U0001f600, arabic عربى"
    assert shown(kept) == kept


def test_shortened_keeps_both_ends_and_says_how_much_went():
    text = "s" * 600 + "m" * 10_000 + "e" * 600
    short = shortened(text, 1000)
    assert short.startswith("s" * 600) and short.endswith("e" * 250)
    assert f"[{len(text) - 1000} characters left out]" in short
    assert shortened("x" * 1000, 1000) == "x" * 1000


def test_progress_line_shows_a_name_inert():
    """The spinner line (cli/progress.py) on a terminal: rich renders the phase's text."""
    import io
    import time

    from rich.console import Console

    from cli.progress import phases

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=200)
    with phases(True, delay=0, console=console) as say:
        say(f"converting {PAYLOAD}")
        for _ in range(600):  # until the spinner shows (a guard, not a timing: at most 60 s)
            if "converting" in sink.getvalue():
                break
            time.sleep(0.1)
    out = RICH_OWN.sub("", sink.getvalue())
    # rich draws the spinner with the cursor hidden and redraws it with \r
    out = out.replace("\r", "")
    assert shown(PAYLOAD) in out
    assert not UNSAFE.findall(out.replace("\n", ""))


def test_debug_traceback_shows_a_message_inert(capsys):
    try:
        raise ValueError(f"bad {PAYLOAD}")
    except ValueError as e:
        echo_traceback(e)
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.endswith(f"ValueError: bad {shown(PAYLOAD)}\n")
    assert not UNSAFE.findall(err.replace("\n", ""))


# Direct writes to the terminal allowed outside cli/terminal.py, each of text made by it:
# the rich table, whose cells are all cli.terminal.plain Text (cli/tables.py); the spinner,
# whose text is too (cli/progress.py); the zoo's progress bar, whose description is `shown`
# and not read as markup (cli/commands/zoo.py).
_ALLOWED = {("tables.py", "print"), ("progress.py", "status"), ("zoo.py", "Progress")}
# Calls that write to the terminal: print(), click.echo/secho, a stream's or console's write
# and print, rich's status, log, progress bar and live display.
_WRITERS = ("print", "echo", "secho", "write", "status", "log", "Progress", "Live")


def test_every_print_in_the_cli_goes_through_cli_terminal():
    found = []
    for path in sorted((ROOT / "cli").rglob("*.py")):
        if path.name == "terminal.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
                else None
            ours = isinstance(f, ast.Name) and name == "echo"  # cli.terminal.echo
            if name in _WRITERS and not ours and (path.name, name) not in _ALLOWED:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(f)}")
    assert not found, found


@pytest.fixture(scope="module")
def long_name(tmp_path_factory) -> tuple[Path, str]:
    """A graph whose input is named by 6 million characters, spaces among them (rich wraps
    between words as well as it folds a word)."""
    import onnx
    from onnx import helper

    name = ("n" * 999 + " ") * 6000
    # An ONNX model: a .webnn text file refuses a token this long (formats/_text_lexer.py).
    graph = helper.make_graph([helper.make_node("Abs", [name], ["y"])], "g",
                              [helper.make_tensor_value_info(name, 1, [2, 3])],
                              [helper.make_tensor_value_info("y", 1, [2, 3])])
    path = tmp_path_factory.mktemp("long_name") / "long.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, name


def test_a_multi_megabyte_name_is_shortened_in_a_terminal_table(long_name):
    """rich folds a cell in time quadratic in its length (minutes for 6 MB): on a terminal,
    the table shows the name's two ends and says what it left out (timeout: a guard only)."""
    path, name = long_name
    code, out = run_on_terminal(["inspect", path.name], path.parent, timeout=120, columns=80)
    assert code == 0, out[-2000:]
    assert len(out) < 100_000  # the table holds about a thousand of the name's characters
    text = RICH_OWN.sub("", out.decode())
    assert "characters left out]" in text
    assert "(1 cell longer than 1000 characters shortened here; piped output and --json hold " \
           "it whole)" in text


def test_piped_the_table_keeps_a_multi_megabyte_name_whole(long_name):
    path, name = long_name
    code, out = run_piped(["inspect", path.name], path.parent, timeout=120)
    assert code == 0
    assert name.encode() in out
    assert b"left out" not in out


def test_a_long_report_line_is_left_to_the_terminal_to_wrap():
    """A line longer than rich wraps quickly (cli/terminal.py) is written as one line."""
    import io

    from rich.console import Console

    from cli.terminal import console_print

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=80, highlight=False)
    line = "inputs: " + ("x" * 999 + " ") * 4000
    console_print(console, line)
    assert sink.getvalue() == line + "\n"  # not broken into 50,000 lines of 80
    console_print(console, "short " * 20)
    assert sink.getvalue().count("\n") == 3  # a short line still wraps within the width


def test_library_warnings_and_log_records_show_inert(tmp_path):
    """A library's warning or log record (no handler of its own) is `shown` on stderr."""
    import subprocess
    import sys

    code = ("import logging, warnings\n"
            "from cli.terminal import show_library_messages\n"
            "show_library_messages()\n"
            f"warnings.warn({PAYLOAD!r})\n"
            f"logging.getLogger('somelib').warning({PAYLOAD!r})\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode()
    assert err.splitlines() == [f"<string>:4: UserWarning: {shown(PAYLOAD)}", shown(PAYLOAD)]
