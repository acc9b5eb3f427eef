"""Tables: within the terminal's width on a terminal (every column kept, words whole), plain
aligned rows when piped, and --json wherever a table is printed."""
import json
import re

import pytest
from click.testing import CliRunner

import cli.tables
import converter
from cli.main import main


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.fixture
def int8_graph(tmp_path):
    """abs of an int8 input (several targets refuse it, with long reasons, and no pass fixes
    it) beside abs of an int64 input (refused too, but the data_types pass fixes it)."""
    b = converter.GraphBuilder("g")
    g = b.build({"y": b.abs(b.input("x", "int8", [2, 3])),
                 "z": b.abs(b.input("w", "int64", [2, 3]))})
    path = tmp_path / "i64.webnn"
    converter.save(g, path)
    return path


REASONS = {"chromium-litert": "abs 'abs' input 'x': data type int8; abs 'abs' output 'abs': "
                              "data type int8",
           "coreml": "graph input 'x': data type int8; graph output 'y': data type int8; "
                     "... 2 more"}


def test_check_table_piped_is_plain_whole_rows(int8_graph):
    r = run("check", int8_graph)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["target", "layout", "result", "first reasons"]
    rows = {re.split(r"\s{2,}", ln)[0]: re.split(r"\s{2,}", ln) for ln in lines[1:6]}
    # the verdict is after the passes: the int64 they fix is no reason
    assert rows["chromium-litert"] == ["chromium-litert", "nhwc", "2 violations",
                                       REASONS["chromium-litert"]]
    assert rows["coreml"] == ["coreml", "nchw", "4 violations", REASONS["coreml"]]
    assert rows["directml"] == ["directml", "nchw", "fits"]
    assert rows["onnxruntime"] == ["onnxruntime", "nchw", "fits"]
    # Columns line up: every row's second column starts where the header's does.
    start = lines[0].index("layout")
    assert all(ln[start:start + 4] in ("nhwc", "nchw") for ln in lines[1:6])


@pytest.mark.parametrize("width", [60, 80, 120])
def test_check_table_fits_the_terminal_keeping_every_column(int8_graph, monkeypatch, width):
    monkeypatch.setattr(cli.tables, "terminal_width", lambda: width)
    r = run("check", int8_graph)
    table = r.stdout.splitlines()[:-1]  # the last line is the summary
    assert all(len(ln.rstrip()) <= width for ln in table), [len(ln) for ln in table]
    assert table[0].split() == ["target", "layout", "result", "first", "reasons"]
    assert sum(ln.split()[1:2] in (["nhwc"], ["nchw"]) for ln in table) == 5  # every layout
    # The reasons wrap between words: joined again, they read as they were written.
    start = table[0].index("first reasons")
    text = " ".join(ln[start:].strip() for ln in table[1:] if ln[start:].strip())
    for reason in REASONS.values():
        assert reason in text


def test_inspect_piped_keeps_its_header_on_one_line(tmp_path):
    b = converter.GraphBuilder("a_graph_with_a_rather_long_name_to_overflow_eighty_columns_x")
    x = b.input("an_input_with_a_long_name_as_transformers_give_them", "float32", [1, 2, 3])
    g = b.build({"out": b.relu(x)})
    converter.save(g, tmp_path / "g.webnn")
    r = run("inspect", tmp_path / "g.webnn")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == (
        "graph a_graph_with_a_rather_long_name_to_overflow_eighty_columns_x: 1 operations, "
        "0 constants (0 B), 0 transposes")
    assert re.split(r"\s{2,}", r.stdout.splitlines()[2].strip()) == [
        "input", "an_input_with_a_long_name_as_transformers_give_them", "float32", "[1, 2, 3]"]


@pytest.mark.parametrize("command", [["inspect"], ["check"], ["verify"], ["ops"], ["targets"],
                                     ["run"], ["convert"], ["validate"], ["zoo"]])
def test_every_command_that_prints_a_result_has_json(command):
    # run (its files, the inputs it made up) and validate (the problems) too, since issue 27
    r = run(*command, "--help")
    assert "--json" in r.output


def test_targets_json_and_table_agree():
    table = run("targets").stdout.splitlines()
    listed = json.loads(run("targets", "--json").stdout)
    assert [ln.split()[0] for ln in table[1:-1]] == [t["name"] for t in listed]
