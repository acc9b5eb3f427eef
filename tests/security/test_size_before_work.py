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
MODELS = Path(__file__).resolve().parents[2] / "models"


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


def test_two_megabytes_of_tiny_fields_are_refused(tmp_path):
    """A million 2-byte fields, then a model: refused once the scan passes 2**20 of them (about
    0.3 s); the bound was 2**22 (1-3 s of walking), under which this file converted."""
    src = tmp_path / "tiny.onnx"
    src.write_bytes(b"\x08\x00" * ((1 << 20) + 1) + _small_model())
    line = refusal("convert", str(src), "-o", str(tmp_path / "out.webnn"))
    assert line == (f"error: {src}: not a readable ONNX model: it has more than 1048576 fields "
                    f"in its model, graph and initializer messages; no real model has; check "
                    f"that the file is a complete .onnx file")


def _fields_counted(path: Path) -> int:
    scans = []
    real_init = wire._Scan.__init__

    def init(self, buf):
        real_init(self, buf)
        scans.append(self)

    wire._Scan.__init__ = init
    try:
        wire.map_model(path)
    finally:
        wire._Scan.__init__ = real_init
    return wire.MAX_FIELDS - scans[0].fields_left


LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
REAL_MODELS = [MODELS / "tiny_cnn.onnx", *sorted((MODELS / "dynamic").glob("*.onnx")),
               *sorted((MODELS / "tiny-llama").glob("*/model.onnx")),
               *sorted(LIGHT.glob("light_*.onnx"))]


@pytest.mark.parametrize("path", REAL_MODELS, ids=lambda p: p.name if p.parent.name in (
    "models", "dynamic", "light") else f"{p.parent.name}/{p.name}")
def test_real_models_count_far_fewer_fields_than_the_bound(path):
    # The margin wire.py's comment gives: the largest (light_densenet121) counts 20,445.
    assert _fields_counted(path) <= wire.MAX_FIELDS // 50


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
