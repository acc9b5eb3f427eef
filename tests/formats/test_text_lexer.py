"""The `.webnn` text lexer on its own: every token kind with its value and its 1-based line and
column, the directives, and each refusal with the line and column it names (counted by hand
from the input text)."""
from __future__ import annotations

import pytest

from converter.errors import ParseError
from converter.formats._text_lexer import Token, is_identifier, quote, tokenize


def _toks(text):
    tokens, names = tokenize(text, "m.webnn")
    return [(t.kind, t.value, t.line, t.column) for t in tokens], names


def test_tokens_values_and_positions():
    text = 'x = relu(a.b, -2, 3.5, 1e3, -4.25E-1, "s\\n", @w);\n\t# note\r\n $y: [ ] {}'
    toks, names = _toks(text)
    assert toks == [
        ("ident", "x", 1, 1), ("punct", "=", 1, 3), ("ident", "relu", 1, 5),
        ("punct", "(", 1, 9), ("ident", "a.b", 1, 10), ("punct", ",", 1, 13),
        ("number", -2, 1, 15), ("punct", ",", 1, 17), ("number", 3.5, 1, 19),
        ("punct", ",", 1, 22), ("number", 1000.0, 1, 24), ("punct", ",", 1, 27),
        ("number", -0.425, 1, 29), ("punct", ",", 1, 37), ("string", "s\n", 1, 39),
        ("punct", ",", 1, 44), ("at", "w", 1, 46), ("punct", ")", 1, 48),
        ("punct", ";", 1, 49), ("ident", "$y", 3, 2), ("punct", ":", 3, 4),
        ("punct", "[", 3, 6), ("punct", "]", 3, 8), ("punct", "{", 3, 10),
        ("punct", "}", 3, 11), ("eof", None, 3, 12)]
    assert names == []
    tokens, _ = tokenize("7 7.0", "m")
    assert type(tokens[0].value) is int and type(tokens[1].value) is float
    assert tokens[0].text == "7" and tokens[2].text == ""


def test_describe_names_a_token_as_written_and_shortens_long_ones():
    tokens, _ = tokenize('"' + "a" * 38 + '" "' + "b" * 39 + '"', "m")
    assert tokens[0].describe() == "'\"" + "a" * 38 + "\"'"  # 40 characters: whole
    assert tokens[1].describe() == "'\"" + "b" * 36 + "...'"  # 41: the first 37 and ...
    assert tokens[2].describe() == "the end of the file"


def test_directives():
    text = ('#@name in0 "input:0"\n#@state "h" "h_out" zeros\n'
            'outputs {\n  #@output "y:0"\n  y;\n}\n')
    tokens, names = tokenize(text, "m")
    assert [(d.kind, d.ident, d.value, d.line, d.column) for d in names] == [
        ("name", "in0", "input:0", 1, 1), ("state", None, ' "h" "h_out" zeros', 2, 1)]
    y = next(t for t in tokens if t.value == "y")
    assert [(d.kind, d.value, d.line, d.column) for d in y.directives] == [("output", "y:0", 4, 3)]
    assert all(not t.directives for t in tokens if t is not y)
    # other comments, and words that only start like a directive, are comments
    tokens, names = tokenize("#@named x\n#@outputs\n# @name\nx", "m")
    assert names == [] and [t.kind for t in tokens] == ["ident", "eof"]
    tokens, _ = tokenize('#@output "a"   \r\nx', "m")  # trailing blanks and CR
    assert tokens[0].directives[0].value == "a"


@pytest.mark.parametrize("text, line, column, message", [
    ('x = "abc\n"', 1, 5, "unterminated string"),
    ("x\n  - 1", 2, 3, "'-' must start a number"),
    ("  12ab", 1, 3, "'12a' is neither a number nor an identifier"),
    ("1_", 1, 1, "'1_' is neither"),
    ("1$", 1, 1, "'1$' is neither"),
    ("x = 1e999", 1, 5, "the number 1e999 is out of range"),
    ("x = -1e999", 1, 5, "the number -1e999 is out of range"),
    ("\n @ x", 2, 2, "'@' must be followed by a word"),
    ("x = %", 1, 5, "unexpected character '%'"),
    ("\n\n#@name x", 3, 1, "malformed #@name directive"),
    ("#@output y", 1, 1, "malformed #@output directive"),
    ('x\n#@output "y"\n', 2, 1, "#@output is not followed by an output"),
    ('a b c\n\n#@output "y"\n', 3, 1, "#@output is not followed by an output"),
    ('x = "\\q"', 1, 5, 'bad escape in string "\\q"'),
    ('x\n  "\\q"', 2, 3, 'bad escape in string "\\q"'),  # columns count from the line
    ('x\n    #@output "\\q"', 2, 5, 'bad escape in string "\\q"'),
    ('x = "\\ud800"', 1, 5, "lone surrogate"),
    ('#@name a "\\udc00"', 1, 1, "lone surrogate"),
])
def test_refusals_name_line_and_column(text, line, column, message):
    with pytest.raises(ParseError) as e:
        tokenize(text, "m.webnn")
    assert message in str(e.value)
    assert (e.value.line_no, e.value.column) == (line, column)
    assert e.value.where == f"m.webnn:{line}:{column}"


def test_a_number_may_end_the_file_and_be_followed_by_punctuation():
    toks, _ = _toks("-1")
    assert toks == [("number", -1, 1, 1), ("eof", None, 1, 3)]
    toks, _ = _toks("2.5)")
    assert toks[:2] == [("number", 2.5, 1, 1), ("punct", ")", 1, 4)]


def test_identifiers_and_quotes():
    assert is_identifier("a/b.c_1") and is_identifier("$x") and is_identifier("/x")
    assert not is_identifier("1a") and not is_identifier("a-b") and not is_identifier("a b")
    assert not is_identifier("")
    assert quote('a"é\n') == '"a\\"é\\n"'
    assert Token("ident", "x", "x", 1, 1).directives == ()
