"""The pieces of the JavaScript module that the emitter writes from values: literals for every
kind of argument, the escapers for strings a model supplies, identifiers made from operand
names, and where a constant's bytes go. Each expected text is the JavaScript (or HTML) the
value must read back as, worked out from the ECMAScript and HTML rules."""
from __future__ import annotations

import json

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.emit.escape import html_text, js_comment, js_string
from converter.emit.javascript import js_op, js_value, module_source
from converter.errors import ConverterError
from converter.ir import ConstantData


def test_numbers_booleans_strings_and_lists():
    assert js_value(True) == "true" and js_value(False) == "false"
    assert js_value(np.int32(7)) == "7" and js_value(np.bool_(True)) == "true"
    # MLNumber: integers a double holds exactly stay plain; beyond 2**53 - 1 they are BigInts
    assert js_value(2**53 - 1) == "9007199254740991"
    assert js_value(-(2**53 - 1)) == "-9007199254740991"
    assert js_value(2**53) == "9007199254740992n" and js_value(-(2**53)) == "-9007199254740992n"
    assert js_value(float("nan")) == "NaN"
    assert js_value(float("inf")) == "Infinity" and js_value(float("-inf")) == "-Infinity"
    assert js_value(0.1) == "0.1" and js_value(-2.5) == "-2.5"
    assert js_value([1, [2.0, "a"]]) == '[1, [2.0, "a"]]' and js_value((3,)) == "[3]"
    with pytest.raises(ConverterError, match=r"cannot write the value \{1: 2\} \(dict\)") as e:
        js_value({1: 2}, where="op 'x'")
    assert e.value.where == "op 'x'"


def test_a_string_literal_reads_back_as_the_same_text_and_holds_no_markup_or_line_end():
    text = 'a"b\\c\n\r\u2028\u2029\x00</script><!--é\ud800'
    literal = js_string(text)
    assert literal.isascii() and "\n" not in literal and "\r" not in literal
    assert "<" not in literal and ">" not in literal
    assert json.loads(literal) == text  # a JSON string literal is a JavaScript one
    assert js_string("<b>") == '"\\u003cb\\u003e"'
    assert js_string("\u2028") == '"\\u2028"'


def test_a_comment_cannot_be_ended_by_a_name():
    for name in ("a\nalert(1)", "a\ralert(1)", "a\u2028alert(1)", "a\u2029alert(1)"):
        comment = js_comment(name)
        assert comment.isascii() and not any(c in comment for c in "\n\r")
    assert js_comment("a */ alert(1) /*") == '"a *\\u002f alert(1) /*"'
    assert json.loads(js_comment("x */ y")) == "x */ y"


def test_html_text_escapes_markup_and_quotes_and_replaces_lone_surrogates():
    assert html_text('<a href="x">\'&') == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;"
    assert html_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert html_text("plain") == "plain"


def test_identifiers_from_operand_names():
    b = GraphBuilder("names")
    x = b.input("3d input", "float32", [2])
    y = b.input("const", "float32", [2])  # a reserved word
    z = b.input("-", "float32", [2])  # nothing left of the name: "_"
    s = b.add(b.add(x, y, name="sum"), z, name="sum2")
    text, _ = module_source(b.build({"out": s}))
    assert 'const _3d_input = builder.input("3d input"' in text
    assert 'const const_1 = builder.input("const"' in text
    assert 'const _ = builder.input("-"' in text
    assert 'const sum = builder.add(_3d_input, const_1, {label: "sum"});' in text


def test_an_emitter_is_registered_once():
    @js_op("test_only_op_registered_once")
    def emit(writer, op):
        return "x"

    with pytest.raises(ValueError, match="registered twice"):
        js_op("test_only_op_registered_once")(emit)


def _constants_module(nbytes: int, origin: str = "bytes", fill=None, data_type="int8"):
    b = GraphBuilder("consts")
    x = b.input("x", data_type, [nbytes])
    if fill is None:
        data = ConstantData(data_type, (nbytes,), array=np.arange(nbytes, dtype=np.uint8)
                            .astype(np.int8), origin=origin)
    else:
        data = ConstantData(data_type, (nbytes,), fill=fill)
    k = b.graph.add_constant("k", data)
    return module_source(b.build({"y": b.add(x, k)}))


def test_small_byte_constants_stay_inline_and_larger_ones_go_to_the_weights():
    text, weights = _constants_module(256)  # 256 bytes: the largest inline constant
    assert "new Uint8Array([0, 1, 2," in text and weights == []
    text, weights = _constants_module(257)
    assert [key for key, _ in weights] == ["k"]
    assert 'weights.bytes("k", "int8", [257])' in text
    # values that were not given as bytes go to the weights whatever their size
    text, weights = _constants_module(4, origin="array")
    assert [key for key, _ in weights] == ["k"]


def test_a_fill_is_one_elements_bytes_repeated():
    text, weights = _constants_module(3, fill=-2)
    assert 'builder.constant({dataType: "int8", shape: [3]}, filled(3, new Uint8Array([254])))' \
        in text and weights == []


def test_the_page_escapes_the_graph_name_and_the_module_file():
    from converter.emit.html_page import page_html

    b = GraphBuilder('<b>"x"</b>')
    g = b.build({"y": b.relu(b.input("x", "float32", [1]))})
    page = page_html(g, "m&'.js")
    assert "&lt;b&gt;&quot;x&quot;&lt;/b&gt;" in page and '<b>"x"</b>' not in page
    assert '"./m&\'.js"' in page and "m&amp;&#x27;.js" in page
    assert "__TITLE__" not in page and "__MODULE__" not in page and "__MODULE_URL__" not in page


def _transpose_op():
    b = GraphBuilder("g")
    x = b.input("x", "float32", [2, 3])
    g = b.build({"y": b.transpose(x, permutation=[1, 0], name="t")})
    return g, g.operations[0]


def test_the_generic_call_refuses_what_it_cannot_write():
    from converter.emit.javascript import ModuleWriter, generic_call

    g, op = _transpose_op()
    writer = ModuleWriter(g, "m.weights")
    assert generic_call(writer, op) == 'builder.transpose(x, {permutation: [1, 0], label: "t"})'
    op.attrs["speed"] = 1
    with pytest.raises(ConverterError, match="'speed' is not an argument or option of "
                                             "transpose") as e:
        generic_call(writer, op)
    assert e.value.where == "transpose 't'"
    del op.attrs["speed"]
    op.inputs[0] = None
    with pytest.raises(ConverterError, match="operand 'input' is missing"):
        generic_call(writer, op)


def test_a_missing_positional_argument_is_refused():
    from converter.emit.javascript import ModuleWriter, generic_call

    b = GraphBuilder("g")
    x = b.input("x", "int32", [2, 6])
    g = b.build({"s": b.slice(x, [0, 0], [2, 2], name="sl")})
    op = g.operations[0]
    del op.attrs["sizes"]
    with pytest.raises(ConverterError, match="argument 'sizes' is missing"):
        generic_call(ModuleWriter(g, "w"), op)


def test_a_graph_without_inputs_has_empty_descriptors():
    b = GraphBuilder("consts only")
    k = b.constant(np.ones(2, np.float32), name="k")
    text, _ = module_source(b.build({"y": b.relu(k)}))
    assert "export const inputs = {};" in text
    assert 'export const outputs = {\n  "y": {dataType: "float32", shape: [2]}\n};' in text
    assert "const used = [];" in text and "unusedInputs: []" in text
    assert "// unused inputs" not in text


def test_outputs_and_unused_inputs_are_named_in_comments():
    b = GraphBuilder("io")
    x = b.input("x", "float32", [2])
    b.input("spare\nx", "float32", [1])
    text, _ = module_source(b.build({"out:0": b.relu(x)}))
    assert '  // output "out:0": f32[2]' in text.splitlines()
    assert '  // unused inputs: "spare\\nx"' in text.splitlines()


def test_a_deep_chain_of_diamonds_is_walked_once_per_operand():
    # y = x + x, forty times over: each operand is reached twice, so a walk that revisited
    # operands would take 2**40 steps; visiting each once takes 41
    b = GraphBuilder("diamonds")
    y = b.input("x", "float32", [1])
    for _ in range(40):
        y = b.add(y, y)
    text, _ = module_source(b.build({"y": y}))
    assert 'const used = ["x"];' in text and "unusedInputs: []" in text
