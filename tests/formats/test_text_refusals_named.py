"""formats.webnn_text / _text_lexer: refusals whose wording depends on which token failed (the
version word, the data type) and a string literal holding a raw tab, which the reader keeps."""
from __future__ import annotations

import pytest

from converter.errors import ParseError
from converter.formats import webnn_text
from converter.formats._text_lexer import tokenize


def _refusal(text: str) -> str:
    with pytest.raises(ParseError) as e:
        webnn_text.parse(text, "p.webnn")
    return e.value.line()


def test_a_raw_tab_in_a_string_is_kept():
    tokens, _ = tokenize('"a\tb" "c\\td"', "p.webnn")
    assert [t.value for t in tokens[:2]] == ["a\tb", "c\td"]


def test_the_version_is_v_and_a_number_only():
    assert _refusal('webnn_graph "t" v {\n}\n') == \
        "p.webnn:1:17: expected the format version (v1), found 'v'"
    # Any other word, even one followed by a number, is no version.
    assert _refusal('webnn_graph "t" x 1 {\n}\n') == \
        "p.webnn:1:17: expected the format version (v1), found 'x'"


def test_a_missing_data_type_says_which_types_exist():
    assert _refusal('webnn_graph "t" v1 {\n  inputs { x: 5[1]; }\n}\n') == (
        "p.webnn:2:15: expected a data type, found '5'; use one of f32, f16, i32, u32, i64, "
        "u64, i8, u8, i4, u4")


def test_a_missing_op_name_shows_the_form_of_a_node():
    assert _refusal('webnn_graph "t" v1 {\n  inputs { x: f32[1]; }\n  nodes { y = 5(x); }\n}\n') \
        == "p.webnn:3:15: expected an op name, found '5'; a node is: y = op(x, option=value);"


def test_a_named_result_is_its_nodes_id():
    doc = webnn_text.parse('#@name y "real y"\nwebnn_graph "t" v1 {\n  inputs { x: f32[1]; }\n'
                           '  nodes { y = relu(x); }\n  outputs { y; }\n}\n', "p.webnn")
    assert (doc.nodes[0].id, doc.nodes[0].outputs, doc.outputs[0].operand) == \
        ("real y", ["real y"], "real y")


def test_an_output_naming_nothing_declared_is_still_written():
    # `validate` and --no-verify show such a graph; the text keeps the name it was given.
    doc = webnn_text.parse('webnn_graph "t" v1 {\n  inputs { x: f32[1]; }\n'
                           '  outputs { ghost; }\n}\n', "p.webnn")
    assert webnn_text.render(doc) == ('webnn_graph "t" v1 {\n  inputs {\n    x: f32[1];\n  }\n'
                                      '  outputs { ghost; }\n}\n')


def test_values_the_text_has_no_form_for_are_refused():
    from converter.formats._text_lexer import number_text
    from converter.formats.webnn_text import _value

    with pytest.raises(TypeError, match="a boolean is not a number"):
        number_text(True)
    with pytest.raises(TypeError, match=r"cannot write \{1\} in the .webnn text"):
        _value({1})
    assert (number_text(3), number_text(0.5), _value([True, None, "a"])) == ("3", "0.5",
                                                                      '[true, null, "a"]')
