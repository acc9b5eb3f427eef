"""Strict JSON (formats._files.parse_json, check_nesting) and UTF-8 text reading, each rule at
its edge: nesting exactly at and one past MAX_NESTING, members given twice, NaN/Infinity
literals, lone surrogate escapes wherever a string can be, and where a syntax error is."""
from __future__ import annotations

import pytest

from converter.errors import FormatError, ParseError
from converter.formats._files import MAX_NESTING, check_nesting, parse_json, read_text


def _nested(depth: int, kind: str = "list") -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a":' * (depth - 1) + "{}"
                                                              + "}" * (depth - 1))


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_nesting_up_to_the_limit_is_read_and_one_more_is_refused(kind):
    assert parse_json(_nested(MAX_NESTING, kind), "f.json", "graph") is not None
    with pytest.raises(FormatError, match=f"nested more than {MAX_NESTING} deep") as e:
        parse_json(_nested(MAX_NESTING + 1, kind), "f.json", "graph")
    assert e.value.where == "f.json" and "no graph needs that" in e.value.fix
    # without the check the caller does it itself
    deep = parse_json(_nested(MAX_NESTING + 1, kind), "f.json", "graph", nesting=False)
    with pytest.raises(FormatError, match="nested more than"):
        check_nesting(deep, "f.json", "graph")
    check_nesting(parse_json(_nested(MAX_NESTING, kind), "f", "g"), "f", "g")


def test_nesting_counts_the_deepest_branch_not_the_first():
    text = "[1, {}, [" + _nested(MAX_NESTING - 1) + "]]"  # the last branch is 65 deep
    with pytest.raises(FormatError, match="nested more than"):
        parse_json(text, "f", "g")
    assert parse_json("[[1], " + _nested(MAX_NESTING - 1) + "]", "f", "g")[0] == [1]


def test_a_member_twice_in_one_object_is_refused_and_in_two_objects_is_not():
    with pytest.raises(FormatError, match="the member 'a' appears twice in one object"):
        parse_json('{"b": 1, "a": 1, "a": 2}', "f", "g")
    assert parse_json('[{"a": 1}, {"a": 2}]', "f", "g") == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_literals_are_refused(literal):
    with pytest.raises(FormatError, match=f"{literal} is not valid JSON"):
        parse_json(f'{{"x": [{literal}]}}', "f", "g")


def test_a_syntax_error_names_its_line_and_column():
    with pytest.raises(ParseError) as e:
        parse_json('{\n  "a": 1,\n  "b" 2\n}', "f.json", "manifest")
    assert (e.value.line_no, e.value.column) == (3, 7)
    assert e.value.fix == "the manifest must be valid JSON"


@pytest.mark.parametrize("text", ['"\\ud800"', '{"\\udc00": 1}', '{"k": "\\uDBFF"}',
                                  '[1, {"k": ["x", "\\ud9ab"]}]'])
def test_lone_surrogate_escapes_are_refused_wherever_they_are(text):
    with pytest.raises(FormatError, match="lone surrogate"):
        parse_json(text, "f", "g")


def test_a_surrogate_pair_is_a_character():
    assert parse_json('{"k": "\\ud83d\\ude00"}', "f", "g") == {"k": "\U0001F600"}


def test_text_must_be_utf8_and_says_where_it_is_not(tmp_path):
    path = tmp_path / "g.webnn"
    path.write_bytes("ok é\n".encode() + b"\xff")
    with pytest.raises(FormatError) as e:
        read_text(path, "graph file")
    assert str(e.value.line()).endswith("the graph file is not UTF-8 text (invalid start byte "
                                        "at byte 6)")
    path.write_bytes("é".encode())
    assert read_text(path, "graph file") == "é"



@pytest.mark.parametrize("digits", [4301, 5000, 100_000])
def test_an_integer_longer_than_int_reads_is_refused_in_words(digits):
    """Python's int() stops at 4300 digits with a ValueError json lets through (an internal
    error on a hostile baseline, found by tools/fuzz_numbers.py); it is a FormatError here."""
    with pytest.raises(FormatError, match=f"an integer of {digits} digits") as e:
        parse_json('{"a": [1, -' + "9" * digits + "]}", "f.json", "baseline")
    assert e.value.where == "f.json"
    assert parse_json('{"a": ' + "9" * 4300 + "}", "f", "g")["a"] == int("9" * 4300)
