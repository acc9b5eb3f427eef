"""Size before work: a length or count a hostile file gives is checked against the file and the
limits before anything is walked, unrolled or allocated by it. Every file here is refused by the
CLI, run in a child with bounded memory, with exit code 2 and one line naming the file; the big
ones are sparse files (truncate), so building them costs nothing.

Before: a zero-filled .onnx was walked two bytes per Python step (a sparse 200 GB one for days)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from converter.importers.onnx import wire

from .bounded import refusal
from .onnx_cases import model, vi

GB = 1000 ** 3


def _sparse(path: Path, head: bytes, size: int) -> Path:
    """A file of `size` bytes: `head`, then zeros that take no disk."""
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def _small_model() -> bytes:
    return model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", shape=[2])],
                 [vi("y", shape=[2])]).SerializeToString()


# -- the ONNX wire scan ------------------------------------------------------------------------
@pytest.mark.parametrize("size", [16 << 20, 200 * GB])
def test_a_zero_filled_onnx_is_refused_at_its_first_byte(tmp_path, size):
    src = _sparse(tmp_path / "zeros.onnx", b"", size)
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line == (f"error: {src}: not a readable ONNX model: byte 0 starts a field numbered "
                    f"0, which protobuf does not allow; check that the file is a complete "
                    f".onnx file")


@pytest.mark.parametrize("tag, what", [(b"\x0b", "wire type 3"), (b"\x0e", "wire type 6"),
                                       (b"\x0f", "wire type 7")])
def test_a_wire_type_onnx_never_uses_is_refused_where_it_stands(tmp_path, tag, what):
    good = _small_model()
    src = _sparse(tmp_path / "m.onnx", good + tag, 200 * GB)
    line = refusal("check", str(src))
    assert f"not a readable ONNX model: byte {len(good)} starts a field of {what}" in line


# Messages the scan steps through, each as the unit a hostile file repeats: the model's own
# fields (ir_version 0), the graph's (empty nodes), empty initializers, initializers holding
# an empty raw_data (the ones the scan re-frames).
UNITS = {"model field": (b"\x08\x00", None, 1), "graph node": (b"\x0a\x00", 7, 1),
         "initializer": (b"\x2a\x00", 7, 1 + wire._ENTRY_COST),
         "raw initializer": (b"\x2a\x02\x4a\x00", 7, 2 + wire._ENTRY_COST)}


@pytest.mark.parametrize("unit", UNITS)
def test_a_file_of_tiny_fields_is_refused_once_past_the_field_limit(tmp_path, unit):
    piece, inside, cost = UNITS[unit]
    body = piece * (wire.MAX_FIELDS // cost + 1)
    if inside is not None:
        body = bytes([inside << 3 | 2]) + wire._encode_varint(len(body)) + body
    src = tmp_path / "tiny.onnx"
    src.write_bytes(body + _small_model())  # a model old code converted, after a long walk
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line == (f"error: {src}: not a readable ONNX model: it has more than "
                    f"{wire.MAX_FIELDS} fields in its model, graph and initializer messages; "
                    f"no real model has; check that the file is a complete .onnx file")


def test_a_model_of_many_fields_within_the_limit_still_reads(tmp_path):
    """The bound is on what is walked: a model with a long run of fields under it reads."""
    src = tmp_path / "many.onnx"
    src.write_bytes(b"\x08\x00" * (wire.MAX_FIELDS - 100) + _small_model())
    stripped, raws, _ = wire.map_model(src)
    assert stripped == src.read_bytes() and raws == []


def test_a_model_protobuf_cannot_parse_is_refused_before_it_is_copied(tmp_path):
    # A 3 GB doc_string (field 6): old code copied all of it into memory first.
    size = 3 * GB
    head = b"\x32" + wire._encode_varint(size)
    src = _sparse(tmp_path / "doc.onnx", head, len(head) + size)
    line = refusal("check", str(src))
    assert line == (f"error: {src}: not a readable ONNX model: without its initializers' data "
                    f"it still takes {len(head) + size} bytes; protobuf reads no message over "
                    f"2 GiB; check that the file is a complete .onnx file")


def test_initializer_data_past_two_gib_is_no_copy(tmp_path):
    """What the 2 GiB bound leaves out: an initializer's raw_data is a view, however big."""
    size = 3 * GB
    head = _small_model()
    tensor = b"\x08\x01\x10\x02\x42\x01w\x4a" + wire._encode_varint(size)  # dims, float, "w"
    graph_extra = b"\x2a" + wire._encode_varint(len(tensor) + size) + tensor
    extra = b"\x3a" + wire._encode_varint(len(graph_extra) + size) + graph_extra
    src = _sparse(tmp_path / "big.onnx", head + extra, len(head) + len(extra) + size)
    stripped, raws, _ = wire.map_model(src)
    assert [r.nbytes for r in raws] == [size]
    assert len(stripped) < len(head) + len(extra)


# -- .npy files the user gives -----------------------------------------------------------------
MODELS = Path(__file__).resolve().parents[2] / "models"


def _npy(path: Path, shape, data: bytes = b"\0" * 64, size: int | None = None) -> Path:
    """A .npy file whose header claims float32 `shape`, followed by `data` (or zeros up to
    `size` bytes, sparse)."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                                 "shape": tuple(shape)})
        f.write(data)
    if size is not None:
        os.truncate(path, size)
    return path


def _npy_commands(tmp_path: Path, npy: Path) -> dict[str, list[str]]:
    folder = tmp_path / "inputs"
    folder.mkdir(exist_ok=True)
    os.link(npy, folder / "image.npy")  # a hard link: a sparse file stays sparse
    onnx_model, graph = str(MODELS / "tiny_cnn.onnx"), str(MODELS / "tiny_cnn.webnn")
    return {"verify --input": ["verify", onnx_model, "--input", f"image={npy}"],
            "verify --inputs": ["verify", onnx_model, "--inputs", str(folder)],
            "run --input": ["run", graph, "--input", f"image={npy}",
                            "--output-dir", str(tmp_path / "out")],
            "convert --const": ["convert", onnx_model, "--const", f"image={npy}",
                                "-o", str(tmp_path / "out.webnn")]}


NPY_COMMANDS = ["verify --input", "verify --inputs", "run --input", "convert --const"]


def _what(command: str) -> str:
    return "--const image" if command == "convert --const" else "input 'image'"


@pytest.mark.parametrize("command", NPY_COMMANDS)
def test_a_npy_header_claiming_more_than_the_file_holds_is_refused_before_allocating(
        tmp_path, command):
    npy = _npy(tmp_path / "short.npy", [10 ** 6, 10 ** 6])  # 4 TB claimed, 64 bytes held
    args = _npy_commands(tmp_path, npy)[command]
    where = tmp_path / "inputs" / "image.npy" if command == "verify --inputs" else npy
    assert refusal(*args) == (
        f"error: {where}: cannot read {_what(command)} as .npy: its header says "
        f"float32[1000000, 1000000], 4000000000000 bytes, but the file holds 64 after its "
        f"header; the file is truncated or damaged; write it again with numpy.save")


@pytest.mark.parametrize("command", NPY_COMMANDS)
def test_a_npy_file_over_the_tensor_limit_is_refused_before_allocating(tmp_path, command):
    # The file really holds what its header says (200 GB, sparse): the per-tensor limit stops it.
    shape = [50_000, 10 ** 6]
    npy = _npy(tmp_path / "big.npy", shape, b"", 128 + 4 * 50_000 * 10 ** 6)
    args = _npy_commands(tmp_path, npy)[command]
    where = tmp_path / "inputs" / "image.npy" if command == "verify --inputs" else npy
    assert refusal(*args) == (
        f"error: {where}: {_what(command)} (float32[50000, 1000000], 186.3 GiB) would allocate "
        f"186.3 GiB, over the per-tensor limit of 1.0 GiB; if the model is trusted, allow it "
        f"with --max-tensor-bytes 187GiB (Python: max_tensor_bytes=)")


# (--inputs DIR reads only the folder's regular files, so a FIFO there is never opened.)
@pytest.mark.parametrize("command", [c for c in NPY_COMMANDS if c != "verify --inputs"])
def test_a_fifo_given_as_a_npy_is_refused_without_blocking(tmp_path, command):
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    args = _npy_commands(tmp_path, _npy(tmp_path / "ok.npy", [1]))[command]
    args = [a.replace(str(tmp_path / "ok.npy"), str(fifo)) for a in args]
    assert refusal(*args) == (f"error: {fifo}: cannot read {_what(command)} as .npy: it is not "
                              f"a regular file; give the path of a .npy file")


# -- Loop and Scan unrolling: one budget for the whole model -----------------------------------
def _loops(trips: int, depth: int, *, fixed: bool) -> bytes:
    """`depth` Loops, each in the body of the one before, each running `trips` times on
    y = x + 1: the condition passed through unchanged (`fixed`: only the trip count ends each
    loop) or computed as i < trips (known only as the loop runs)."""
    from onnx import TensorProto as T, numpy_helper

    def tensor(name, elem, shape):
        return helper.make_tensor_value_info(name, elem, shape)

    body = None
    for k in reversed(range(depth)):
        cond = helper.make_node("Identity", [f"c{k}"], [f"co{k}"]) if fixed else \
            helper.make_node("Less", [f"i{k}", f"M{k}"], [f"co{k}"])
        inits = []
        if body is None:
            step = helper.make_node("Add", [f"v{k}", "one"], [f"vo{k}"])
        else:
            step = helper.make_node("Loop", [f"M{k + 1}", "", f"v{k}"], [f"vo{k}"], body=body)
            inits.append(numpy_helper.from_array(np.array(trips, np.int64), f"M{k + 1}"))
        body = helper.make_graph(
            [cond, step], f"body{k}",
            [tensor(f"i{k}", T.INT64, []), tensor(f"c{k}", T.BOOL, []),
             tensor(f"v{k}", T.FLOAT, [2])],
            [tensor(f"co{k}", T.BOOL, []), tensor(f"vo{k}", T.FLOAT, [2])], inits)
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M0"),
             numpy_helper.from_array(np.ones(2, np.float32), "one")]
    return model([helper.make_node("Loop", ["M0", "", "x"], ["y"], body=body)],
                 [vi("x", shape=[2])], [vi("y", shape=[2])], inits).SerializeToString()


def _convert_refused(tmp_path, data: bytes) -> tuple[Path, str]:
    src = tmp_path / "loops.onnx"
    src.write_bytes(data)
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line.startswith(f"error: {src}: 1 unsupported: Loop 'Loop_0': ")
    return src, line.split("Loop 'Loop_0': ", 1)[1].split("; change or remove")[0]


def test_a_trip_count_past_the_budget_is_refused_before_the_first_copy(tmp_path):
    # Was: 10,000 copies made (15 s) before the limit was reached.
    _, reason = _convert_refused(tmp_path, _loops(10 ** 9, 1, fixed=True))
    assert reason == ("its trip count asks for 1000000000 iterations of its 2-node body, past "
                      "the limit of 20000 body nodes imported by unrolling (20000 left of it)")


def test_nested_trip_counts_multiply_against_one_budget(tmp_path):
    # Three loops of 100: 10**6 copies, each loop within its own budget before (559 bytes ran
    # for minutes). Their product is known from the file: refused before any copy.
    _, reason = _convert_refused(tmp_path, _loops(100, 3, fixed=True))
    assert reason == ("its trip count asks for 100 iterations of its 2-node body (with what "
                      "its inner loops and branches import, at least 20001 nodes a copy), past "
                      "the limit of 20000 body nodes imported by unrolling (20000 left of it)")


def _loop_around_if(trips: int, then_nodes: int, else_nodes: int, cond_known: bool) -> bytes:
    """A Loop (condition passed through) whose body holds an If, each branch adding 1 to y
    as many times as it has nodes; the If's condition is a constant true (one branch
    imported) or the model's input (both)."""
    from onnx import TensorProto as T, numpy_helper

    def branch(name, nodes):
        adds = [helper.make_node("Add", [f"{name}{k}" if k else "v", "one"],
                                 [f"{name}{k + 1}" if k + 1 < nodes else f"{name}_out"])
                for k in range(nodes)]
        return helper.make_graph(adds, name, [], [vi(f"{name}_out", shape=[2])])

    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("If", ["flag"], ["vo"], then_branch=branch("then", then_nodes),
                          else_branch=branch("else", else_nodes))],
        "body", [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("v", shape=[2])],
        [vi("co", T.BOOL, []), vi("vo", shape=[2])])
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M"),
             numpy_helper.from_array(np.ones(2, np.float32), "one")]
    inputs = [vi("x", shape=[2])]
    if cond_known:
        inits.append(numpy_helper.from_array(np.array(True), "flag"))
    else:
        inputs.append(vi("flag", T.BOOL, []))
    return model([helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)], inputs,
                 [vi("y", shape=[2])], inits).SerializeToString()


def test_branches_inside_a_loop_count_before_the_first_copy(tmp_path):
    # 1,000 copies of a body whose branches have 30 nodes each: 32,000 nodes at the least.
    # Was: each copy counted as its 2 nodes, and all 32,000 were imported.
    _, reason = _convert_refused(tmp_path, _loop_around_if(1000, 30, 30, cond_known=True))
    assert reason == ("its trip count asks for 1000 iterations of its 2-node body (with what "
                      "its inner loops and branches import, at least 32 nodes a copy), past the "
                      "limit of 20000 body nodes imported by unrolling (20000 left of it)")


def test_branches_inside_a_loop_count_in_every_copy_as_it_is_made(tmp_path):
    # The smaller branch has 1 node, so nothing is refused up front; with the condition known
    # only at run time both branches are imported in each copy (2 + 100 + 1 nodes), and the
    # 195th copy's then-branch would pass the budget. Was: all 1,000 copies, 103,000 nodes.
    _, reason = _convert_refused(tmp_path, _loop_around_if(1000, 100, 1, cond_known=False))
    assert reason == ("in its body, If 'If_1': one more copy of its 100-node then_branch would "
                      "take the model past 20000 body nodes imported by unrolling (19984 so "
                      "far; every copy counts, loops inside loops too)")


def test_nested_loops_ending_on_their_conditions_stop_at_the_shared_budget(tmp_path):
    # Conditions computed as the loops run: nothing is refused up front, and the copies made,
    # at every depth, count against one budget.
    _, reason = _convert_refused(tmp_path, _loops(100, 3, fixed=False))
    assert reason == ("in its body, Loop 'Loop_1': one more copy of its 2-node body would take "
                      "the model past 20000 body nodes imported by unrolling (20000 so far; "
                      "every copy counts, loops inside loops too)")


@pytest.mark.parametrize("fixed", [True, False])
def test_nested_loops_within_the_budget_still_unroll(tmp_path, fixed):
    import converter

    src = tmp_path / "loops.onnx"
    src.write_bytes(_loops(10, 3, fixed=fixed))  # 10 * (2 + 10 * (2 + 10 * 2)) = 2220 nodes
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(converter.run(converter.load(src), {"x": x})["y"], x + 1000)


def test_a_scan_longer_than_what_a_loop_left_of_the_budget_is_refused_up_front(tmp_path):
    """A Loop of 1,000 copies of 2 nodes, then a Scan of 19,000 steps of 1: each fitted its own
    budget before (20,000 copies made); together they pass the model's one budget, and the
    Scan's length, known from its input, is refused before its first copy."""
    from onnx import TensorProto as T
    from onnx import numpy_helper

    scan_body = helper.make_graph([helper.make_node("Add", ["acc", "item"], ["acc_out"])],
                                  "scan_body", [vi("acc", shape=[2]), vi("item", shape=[2])],
                                  [vi("acc_out", shape=[2])])
    loop = onnx.ModelProto()
    loop.ParseFromString(_loops(1000, 1, fixed=True))
    graph = loop.graph
    graph.node.append(helper.make_node("Scan", ["y", "seq"], ["total"], body=scan_body,
                                       num_scan_inputs=1))
    graph.input.append(vi("seq", T.FLOAT, [19000, 2]))
    del graph.output[:]
    graph.output.append(vi("total", shape=[2]))
    loop.opset_import[0].version = 16
    src = tmp_path / "scan.onnx"
    src.write_bytes(loop.SerializeToString())
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line.startswith(f"error: {src}: 1 unsupported: Scan 'Scan_1': its scan inputs give "
                           f"19000 iterations of its 1-node body, past the limit of 20000 body "
                           f"nodes imported by unrolling (18000 left of it)")


# -- the .webnn text reader --------------------------------------------------------------------
def _graph_text(option: str) -> str:
    return ('webnn_graph "t" v1 {\n  inputs { x: f32[2]; }\n'
            f'  nodes {{ y = relu(x, extra={option}); }}\n  outputs {{ y; }}\n}}\n')


LONG = 16 << 20
# What a hostile file makes long, and where on line 3 it starts.
LONG_TOKENS = {
    "string": ('"' + "a" * LONG + '"', 29, "a string runs past 65536 characters"),
    "string of escapes": ('"' + "\\n" * (LONG // 2) + '"', 29,
                          "a string runs past 65536 characters"),
    "name": ("a" * LONG, 29, "a name runs past 65536 characters"),
    "@word": ("@" + "w" * LONG, 29, "an @word runs past 65536 characters"),
    "number": ("9" * 5000, 29, "a number runs past 1000 characters"),
}


@pytest.mark.parametrize("kind", LONG_TOKENS)
def test_a_long_token_is_refused_at_its_line_before_it_is_matched(tmp_path, kind):
    # Was: ~125 bytes held per character of a string (16 MB: 2 GB); a long number an
    # internal error (Python's int digits limit).
    token, column, message = LONG_TOKENS[kind]
    src = tmp_path / "long.webnn"
    src.write_text(_graph_text(token))
    assert refusal("check", str(src)) == (
        f"error: {src}:3:{column}: {message}; no graph needs one that long; the file is "
        f"corrupt or hostile")


def test_a_long_directive_is_refused_at_its_line(tmp_path):
    src = tmp_path / "long.webnn"
    src.write_text('#@name x "' + "a" * LONG + '"\n' + _graph_text("1"))
    assert refusal("check", str(src)) == (
        f"error: {src}:1:1: a #@ directive runs past 65536 characters; no graph needs one that "
        f"long; the file is corrupt or hostile")


def test_a_long_plain_comment_is_skipped_as_before(tmp_path):
    from converter.formats import webnn_text

    doc = webnn_text.parse("# " + "a" * LONG + "\n" + _graph_text("1"), "c.webnn")
    assert doc.nodes[0].options["extra"] == 1


def test_more_tokens_than_the_limit_are_refused_at_the_first_one_past_it(tmp_path):
    from converter.formats._text_lexer import MAX_TOKENS

    src = tmp_path / "many.webnn"
    src.write_text(_graph_text("[" + "0," * MAX_TOKENS + "0]"))
    line = refusal("check", str(src))
    assert line.startswith(f"error: {src}:3:") and line.endswith(
        f": the file has more than {MAX_TOKENS} tokens; no graph needs that many; the file is "
        f"corrupt or hostile")


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_a_graph_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, suffix):
    # A sparse 200 GB file: was read whole into memory first.
    src = _sparse(tmp_path / f"big{suffix}", b"", 200 * GB)
    assert refusal("check", str(src)) == (
        f"error: {src}: the graph file is {200 * GB} bytes, over the limit of {32 << 20} for "
        f"one; no graph file needs that much; the file is corrupt or hostile (weights belong "
        f"in .weights files)")


def test_a_weights_manifest_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    import shutil

    for suffix in (".webnn", ".weights"):
        shutil.copy(MODELS / f"tiny_cnn{suffix}", tmp_path / f"tiny_cnn{suffix}")
    manifest = _sparse(tmp_path / "tiny_cnn.manifest.json", b"", 200 * GB)
    assert refusal("check", str(tmp_path / "tiny_cnn.webnn")) == (
        f"error: {manifest}: the weights manifest is {200 * GB} bytes, over the limit of "
        f"{32 << 20} for one; no weights manifest needs that much; the file is corrupt or "
        f"hostile (weights belong in .weights files)")
