"""The JavaScript emitter on its own (no browser): what the module says, and the files beside it."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.emit.javascript import module_source, write_js
from converter.errors import ConverterError
from converter.ir import ConstantData
from converter.formats.weights import WeightsFile


def _graph():
    b = GraphBuilder("odd names")
    x = b.input("serving_default_input:0", "float32", [1, 4])
    w = b.constant(np.arange(8, dtype=np.float32).reshape(4, 2), name="dense/kernel")
    bias = b.constant("float32", [2], np.array([0.5, -0.5], np.float32), name="class")
    y = b.gemm(x, w, c=bias, alpha=2.0, name='Gemm "1"/gemm')
    return b.build({"out:0": b.relu(y, name="relu</script>")})


def test_calls_name_inputs_outputs_and_labels_by_their_source_names():
    text, weights = module_source(_graph(), "m.weights")
    assert 'builder.input("serving_default_input:0", {dataType: "float32", shape: [1, 4]})' in text
    # Operand-valued options are operands in the options object; label is the node's name.
    assert ('builder.gemm(serving_default_input_0, dense_kernel, {alpha: 2.0, c: class_1, '
            'label: "Gemm \\"1\\"/gemm"})') in text
    assert 'builder.build({"out:0": relu__script_})' in text
    assert [key for key, _ in weights] == ["dense/kernel", "class"]


def test_positional_arguments_lists_and_multiple_results():
    b = GraphBuilder("shapes")
    x = b.input("x", "int32", [2, 6])
    p, q = b.split(x, [2, 4], axis=1, name="s")
    c = b.concat([p, b.slice(q, [0, 0], [2, 2], name="sl")], 0, name="cat")
    text, _ = module_source(b.build({"c": c}))
    assert 'const [s_0, s_1] = builder.split(x, [2, 4], {axis: 1, label: "s"});' in text
    assert 'builder.slice(s_1, [0, 0], [2, 2], {label: "sl"})' in text
    assert 'builder.concat([s_0, sl], 0, {label: "cat"})' in text


def test_fills_inline_bytes_and_big_integers():
    b = GraphBuilder("consts")
    x = b.input("x", "int64", [3])
    big = b.constant("int64", 2**60, name="big")  # a fill: one element's bytes, repeated
    tiny = b.graph.add_constant("tiny", ConstantData(  # read from `@bytes(...)`: inline
        "int8", (2,), array=np.array([1, -1], np.int8), origin="bytes"))
    y = b.pad(b.add(x, big), [1], [0], value=2**53 + 1)
    text, weights = module_source(b.build({"y": y, "t": b.identity(tiny)}))
    assert "builder.constant({dataType: \"int64\", shape: []}, filled(8, new Uint8Array([0, 0, " \
           "0, 0, 0, 0, 0, 16])))" in text
    assert 'builder.constant({dataType: "int8", shape: [2]}, new Uint8Array([1, 255]))' in text
    assert "value: 9007199254740993n" in text  # MLNumber beyond 2^53: a BigInt literal
    assert weights == []


def test_a_repeated_output_goes_through_identity_and_unused_inputs_are_listed():
    b = GraphBuilder("io")
    x = b.input("x", "float32", [2])
    b.input("spare", "float32", [1])
    r = b.relu(x)
    text, _ = module_source(b.build({"a": r, "b": r}))
    assert 'const b_identity = builder.identity(relu, {label: "b_identity"});' in text
    assert 'builder.build({"a": relu, "b": b_identity})' in text
    assert 'unusedInputs: ["spare"]' in text and 'const used = ["x"];' in text


def test_write_js_writes_module_page_and_wgwt_weights(tmp_path):
    paths = write_js(_graph(), tmp_path / "model.js")
    assert sorted(p.name for p in paths) == ["model.html", "model.js", "model.manifest.json",
                                            "model.weights"]
    weights = WeightsFile(tmp_path / "model.manifest.json", tmp_path / "model.weights")
    kernel = weights.tensor("dense/kernel", "float32", (4, 2), "test")
    assert kernel.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert (tmp_path / "model.weights").read_bytes()[:8] == b"WGWT\x01\x00\x00\x00"
    page = (tmp_path / "model.html").read_text()
    assert 'import * as model from "./model.js";' in page and "odd names" in page


def test_an_invalid_graph_or_name_writes_nothing(tmp_path):
    with pytest.raises(ConverterError, match="must end in .js"):
        write_js(_graph(), tmp_path / "model.mjs")
    graph = _graph()
    graph.outputs.clear()  # no outputs: invalid
    with pytest.raises(ConverterError):
        write_js(graph, tmp_path / "model.js")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_module_and_the_page_script_are_valid_javascript(tmp_path):
    write_js(_graph(), tmp_path / "model.js")
    (tmp_path / "model.mjs").write_text((tmp_path / "model.js").read_text())
    done = subprocess.run(["node", "--check", str(tmp_path / "model.mjs")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "model.html").read_text()
    script = page.split('<script type="module">')[1].split("</script>")[0]
    (tmp_path / "page.mjs").write_text(script)
    done = subprocess.run(["node", "--check", str(tmp_path / "page.mjs")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    json.loads((tmp_path / "model.manifest.json").read_text())


def test_a_state_initial_value_is_written_to_the_weights_file(tmp_path):
    """The state list names a weights key; the value under that key is the initial value."""
    b = GraphBuilder("acc")
    acc = b.input("acc", "float32", [1, 3])
    graph = b.build({"acc_next": b.add(acc, b.input("x", "float32", [1, 3]))})
    graph.declare_state("acc", "acc_next", initial=np.array([[1.5, -2.0, 3.0]], np.float32))
    write_js(graph, tmp_path / "model.js")
    assert '{input: "acc", output: "acc_next", initial: "acc/initial"}' in \
        (tmp_path / "model.js").read_text()
    weights = WeightsFile(tmp_path / "model.manifest.json", tmp_path / "model.weights")
    assert weights.tensor("acc/initial", "float32", (1, 3), "test").tolist() == [[1.5, -2.0, 3.0]]


def test_only_a_filled_constant_takes_its_shape_as_an_expression():
    from converter.emit.javascript import ModuleWriter
    data = ConstantData("float32", (2,), array=np.array([1.0, 2.0], np.float32))
    writer = ModuleWriter(_graph(), "m.weights")
    with pytest.raises(ConverterError, match="only a filled constant") as raised:
        writer.constant_call("w", data, shape="[n]")
    assert "constant 'w'" in str(raised.value)
    filled = ConstantData("float32", (2,), fill=0.5)
    assert writer.constant_call("f", filled, shape="[n]") == (
        'builder.constant({dataType: "float32", shape: [n]}, filled(byteLength("float32", [n]), '
        'new Uint8Array([0, 0, 0, 63])))')
