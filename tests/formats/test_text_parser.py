"""The `.webnn` parser and writer in detail: each refusal with the line and column of the token
it names (counted by hand), values of every kind, and the text written for names, values and
annotations."""
from __future__ import annotations

import pytest

from converter.errors import ParseError
from converter.formats._files import MAX_NESTING
from converter.formats.document import (ConstDecl, GraphDoc, InputDecl, NodeDecl, OutputDecl,
                                        Ref)
from converter.formats.webnn_text import parse, render

HEAD = 'webnn_graph "t" v1 {\n'


@pytest.mark.parametrize("text, line, column, what", [
    ('graph "t" v1 {}', 1, 1, "expected 'webnn_graph', found 'graph'"),
    ("webnn_graph t v1 {}", 1, 13, "expected the graph's name as a \"string\", found 't'"),
    ('webnn_graph "t" 1 {}', 1, 17, "expected the format version (v1), found '1'"),
    ('webnn_graph "t" version {}', 1, 17, "expected the format version (v1), found 'version'"),
    ('webnn_graph "t" v 3 {}', 1, 17, "format version v3 is not supported"),
    ('webnn_graph "t" v0 {}', 1, 17, "format version v0 is not supported"),
    ('webnn_graph "t" v1 @fast {}', 1, 20, "unknown header annotation @fast"),
    ('webnn_graph "t" v1 }', 1, 20, "expected '{' after the header, found '}'"),
    (HEAD + "  inputs x", 2, 10, "expected '{' after 'inputs', found 'x'"),
    (HEAD + "  inputs { x f32[1]; }", 2, 14, "expected ':' after input 'x', found 'f32'"),
    (HEAD + "  inputs { x: f32[1 2]; }", 2, 21, "expected ',' between dimensions, found '2'"),
    (HEAD + "  inputs { x: f32[-1]; }", 2, 19, "a dimension -1 is out of range (at least 0)"),
    (HEAD + "  inputs { x: f32[1.5]; }", 2, 19, "expected a dimension (an integer), found '1.5'"),
    (HEAD + "  inputs { x: f32 1; }", 2, 19, "expected '[' to open the shape, found '1'"),
    (HEAD + "  inputs { 1: f32[1]; }", 2, 12, "expected an input name, found '1'"),
    (HEAD + '  consts { w: f32[1] @weights(w); }', 2, 31,
     "expected the weights key as a \"string\", found 'w'"),
    (HEAD + '  consts { w: f32[] @scalar("1"); }', 2, 29, "expected a number, found '\"1\"'"),
    (HEAD + '  consts { w: f32[] @zeros(1); }', 2, 21, "unknown constant annotation @zeros"),
    (HEAD + '  consts { w: u8[2] @bytes([1 2]); }', 2, 31, "expected ',' between bytes"),
    (HEAD + '  consts { w: u8[1] @bytes([-1]); }', 2, 29, "a byte -1 is out of range (0 to 255)"),
    (HEAD + '  consts { w: u8[1] @bytes(1); }', 2, 28, "expected '[' to open the byte list"),
    (HEAD + '  consts { w: f32[] @scalar(1; }', 2, 30, "expected ')' to close @scalar("),
    (HEAD + "  nodes { [a b] = split(x); }", 2, 14, "expected ']' to close the result names"),
    (HEAD + "  nodes { [a, 1] = split(x); }", 2, 15, "expected a result name, found '1'"),
    (HEAD + "  nodes { a, b = split(x); }", 2, 12, "expected '=' after 'a', found ','"),
    (HEAD + "  nodes { [a, b] split(x); }", 2, 18, "expected '=' after the result names"),
    (HEAD + "  nodes { y = relu x; }", 2, 20, "expected '(' after the op name 'relu'"),
    (HEAD + "  nodes { y = relu(x; }", 2, 21, "expected ')' to close the arguments of relu"),
    (HEAD + "  nodes { y = relu(x) }", 2, 23, "expected ';' after the node, found '}'"),
    (HEAD + "  nodes { y = f(x, a=1, a=2); }", 2, 25, "'a' is given twice"),
    (HEAD + "  nodes { y = f(x, a=[1 2]); }", 2, 25, "expected ',' between list items"),
    (HEAD + "  nodes { y = f(x, a=;); }", 2, 22, "expected a value, found ';'"),
    (HEAD + "  nodes { y = f([]); }", 2, 17, "positional argument '[' of f is not an operand"),
    (HEAD + "  nodes { y = f([x, 1]); }", 2, 17, "positional argument '[' of f is not an operand"),
    (HEAD + "  nodes { y = f(true); }", 2, 17, "positional argument 'true' of f is not an operand"),
    (HEAD + "  outputs { 1; }", 2, 13, "expected an output name, found '1'"),
    (HEAD + "  outputs { y z }", 2, 15, "expected ';' after output 'y', found 'z'"),
    (HEAD + '  outputs {\n    #@output "a"\n    #@output "b"\n    y;\n  }\n}', 4, 5,
     "two #@output directives for one output"),
    (HEAD + '  #@name x "a"\n  #@name x "b"\n  inputs { x: f32[1]; }\n}', 3, 3,
     "#@name gives 'x' a second name"),
    (HEAD + '  #@name x ""\n  inputs { x: f32[1]; }\n}', 2, 3, "#@name gives an empty name"),
])
def test_refusals_name_the_token(text, line, column, what):
    with pytest.raises(ParseError) as e:
        parse(text, "t.webnn")
    assert what in e.value.what, e.value.what
    assert (e.value.line_no, e.value.column) == (line, column)


def _node_options(options: str):
    doc = parse(HEAD + f"  nodes {{ y = f(x, {options}); }}\n  outputs {{ y; }}\n}}\n", "t")
    return doc.nodes[0].options


def test_values_of_every_kind():
    assert _node_options('a=1, b=-2.5, c="s", d=true, e=false, f=null, g=nhwc, h=[1, [2], []]') \
        == {"a": 1, "b": -2.5, "c": "s", "d": True, "e": False, "f": None, "g": Ref("nhwc"),
            "h": [1, [2], []]}
    deepest = "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1)  # the option's list is depth 1
    assert _node_options(f"a=[{deepest}]")["a"] is not None
    with pytest.raises(ParseError, match=f"lists are nested more than {MAX_NESTING} deep"):
        _node_options(f"a=[[{deepest}]]")


def test_header_versions_and_outputs_separators():
    doc = parse('webnn_graph "g" v 2 @quantized {\n  outputs { a, b; c }\n}\n', "t")
    assert (doc.name, doc.version, doc.quantized) == ("g", 2, True)
    assert [o.operand for o in doc.outputs] == ["a", "b", "c"]
    assert [o.where for o in doc.outputs] == ["t:2:13", "t:2:16", "t:2:19"]
    assert parse('webnn_graph "g" v1 { }', "t").quantized is False


def test_declarations_where_and_names():
    text = (HEAD + '  #@name in0 "input:0"\n  inputs { in0: f32[2, 3]; }\n'
            '  consts { w: f32[3]; k: u8[2] @bytes([1, 2]); s: i32[] @scalar(-4); }\n'
            '  nodes { [p, q] = split(in0, splits=2, axis=1); }\n  outputs { p; }\n}\n')
    doc = parse(text, "t")
    (x,) = doc.inputs
    assert (x.name, x.data_type, x.shape, x.where) == ("input:0", "float32", (2, 3), "t:3:12")
    w, k, s = doc.consts
    assert (w.kind, w.key, w.where) == ("weights", "w", "t:4:12")
    assert (k.kind, k.key, k.data) == ("bytes", None, b"\x01\x02")
    assert (s.kind, s.key, s.value, s.data_type) == ("scalar", None, -4, "int32")
    (n,) = doc.nodes
    assert (n.outputs, n.id, n.where, n.output_where) == (["p", "q"], "p", "t:5:11",
                                                          ["t:5:12", "t:5:15"])
    assert n.input_where == ["t:5:26"]
    assert n.option_where == {"splits": "t:5:31", "axis": "t:5:41"}


def _doc():
    doc = GraphDoc("t", "t")
    doc.inputs.append(InputDecl("input:0", "float32", (2,)))
    doc.consts += [ConstDecl("k", "uint8", (2,), "bytes", data=b"\x01\x02"),
                   ConstDecl("s", "float32", (), "scalar", value=0.5),
                   ConstDecl("w", "float32", (2,), "weights", key="w/0")]
    doc.nodes.append(NodeDecl("f", ["input:0", ["input:0", "w"]],
                              {"o": [1, 2.5, "nhwc", True, None]}, ["a:0"], "a:0"))
    doc.outputs.append(OutputDecl("out", "a:0"))
    return doc


def test_render_names_values_and_annotations():
    written = render(_doc())
    assert written.splitlines() == [
        'webnn_graph "t" v1 {',
        "  inputs {",
        '    #@name input_0 "input:0"',
        "    input_0: f32[2];",
        "  }",
        "  consts {",
        "    k: u8[2] @bytes([1, 2]);",
        "    s: f32[] @scalar(0.5);",
        '    w: f32[2] @weights("w/0");',
        "  }",
        "  nodes {",
        '    #@name a_0 "a:0"',
        '    a_0 = f(input_0, [input_0, w], o=[1, 2.5, "nhwc", true, null]);',
        "  }",
        "  outputs {",
        '    #@output "out"',
        "    a_0;",
        "  }",
        "}"]
    back = parse(written, "t")  # and it reads back as the same declarations
    assert [i.name for i in back.inputs] == ["input:0"]
    assert [(c.kind, c.key, c.value, c.data) for c in back.consts] == [
        ("bytes", None, None, b"\x01\x02"), ("scalar", None, 0.5, None),
        ("weights", "w/0", None, None)]
    assert [(o.key, o.operand) for o in back.outputs] == [("out", "a:0")]


def test_render_of_plain_outputs_non_finite_values_and_keyword_names():
    doc = GraphDoc("g", "t", quantized=True)
    doc.inputs.append(InputDecl("true", "int32", (1, 2)))
    doc.nodes.append(NodeDecl("f", ["true"], {"lo": float("-inf"), "hi": float("inf"),
                                              "n": float("nan"), "b": False, "t": (1, 2),
                                              "i": -3}, ["y", "z"], "y"))
    doc.outputs += [OutputDecl("y", "y"), OutputDecl("true", "true")]
    lines = render(doc).splitlines()
    assert lines[0] == 'webnn_graph "g" v1 @quantized {'
    assert '    #@name _true "true"' in lines and "    _true: i32[1, 2];" in lines
    assert ('    [y, z] = f(_true, lo="-Infinity", hi="Infinity", n="NaN", b=false, t=[1, 2], '
            'i=-3);') in lines
    assert "  outputs { y; _true; }" in lines


def test_loads_verifies_the_graph_unless_told_not_to():
    import json

    from converter.errors import GraphInvalidError
    from converter.formats import webnn_json, webnn_text

    text = 'webnn_graph "t" v1 {\n  inputs { x: f32[1]; }\n  outputs { x; }\n}\n'
    with pytest.raises(GraphInvalidError):
        webnn_text.loads(text)
    assert webnn_text.loads(text, verify=False).problems()
    doc = {"format": "webnn-graph-json", "version": 2, "name": "t",
           "inputs": {"x": {"dataType": "float32", "shape": [1]}}, "nodes": [],
           "outputs": {"x": "x"}}
    with pytest.raises(GraphInvalidError):
        webnn_json.loads(json.dumps(doc))
    assert webnn_json.loads(json.dumps(doc), verify=False).problems()


def test_tokens_and_directives_are_immutable_values():
    import dataclasses

    from converter.formats._text_lexer import Directive, Token

    token, directive = Token("ident", "x", "x", 1, 1), Directive("name", "x", "y", 1, 1)
    assert hash(token) == hash(Token("ident", "x", "x", 1, 1)) and hash(directive) is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        token.text = "y"
    with pytest.raises(dataclasses.FrozenInstanceError):
        directive.value = "z"
