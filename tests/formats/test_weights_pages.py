"""formats.weights, observed through the operating system and the bytes: which mapped pages
are released after a tensor is written (read from /proc/self/pagemap's "present" bit), the
little-endian row-major bytes of strided and big-endian arrays, mappings closed on refusal, and
the key checks on both the read and the write side."""
from __future__ import annotations

import dataclasses
import io
import mmap
import random
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from converter.errors import WeightsError
from converter.formats.weights import (
    HEADER_SIZE, WeightsFile, key_problem, manifest_text, release_array_pages,
    release_mapped_pages, safe_key, write_weights)
from converter.ir import ConstantData
from converter.ir.operand import pack4

PAGE = mmap.PAGESIZE
pytestmark = pytest.mark.skipif(not Path("/proc/self/pagemap").exists() or PAGE != 4096,
                                reason="pages are observed in Linux's /proc/self/pagemap")

# float32[5, 1024] at bytes 8..20488 (pages 0..5), int4[40960] at 20488..40968 (pages 5..10).
FLOATS = np.arange(5 * 1024, dtype=np.float32).reshape(5, 1024)
NIBBLES = (np.arange(40960) % 16 - 8).astype(np.int8)


def _write(folder: Path, tensors) -> WeightsFile:
    stream = io.BytesIO()
    manifest = write_weights(stream, tensors)
    (folder / "m.weights").write_bytes(stream.getvalue())
    (folder / "m.manifest.json").write_text(manifest_text(manifest))
    return WeightsFile(folder / "m.manifest.json", folder / "m.weights")


@pytest.fixture
def weights(tmp_path):
    return _write(tmp_path, [("w", ConstantData("float32", FLOATS.shape, array=FLOATS)),
                             ("q", ConstantData("int4", NIBBLES.shape, array=pack4(NIBBLES)))])


def _resident(mapping: mmap.mmap) -> list[bool]:
    """Whether each page of `mapping` is in this process's page table."""
    base = np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data
    pages = -(-len(mapping) // PAGE)
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(base // PAGE * 8)
        words = struct.unpack(f"<{pages}Q", f.read(pages * 8))
    return [bool(w >> 63) for w in words]


def _touch(mapping: mmap.mmap) -> None:
    np.frombuffer(mapping, dtype=np.uint8).sum()
    assert all(_resident(mapping))


ALL = [True] * 11
W_RELEASED = [True, False, False, False, False, True] + [True] * 5   # pages 1..4
Q_RELEASED = [True] * 6 + [False] * 4 + [True]                       # pages 6..9


def test_only_the_whole_pages_under_a_tensor_are_released(weights):
    m = weights._map
    assert len(m) == 40968
    view = weights.tensor("w", "float32", (5, 1024), "here")
    _touch(m)
    release_mapped_pages(ConstantData("float32", (5, 1024), array=view).raw_bytes())
    assert _resident(m) == W_RELEASED
    _touch(m)
    release_array_pages(view.T)  # a strided view spans the same memory
    assert _resident(m) == W_RELEASED
    _touch(m)
    release_mapped_pages(memoryview(weights.tensor("q", "int4", (40960,), "here")))
    assert _resident(m) == Q_RELEASED
    _touch(m)
    release_mapped_pages(memoryview(view)[1:1])  # nothing: no error, nothing released
    release_array_pages(view[:0])
    release_array_pages(np.ones(4096, np.float32))  # not a mapping
    release_mapped_pages(memoryview(np.ones(4096, np.float32)))
    assert _resident(m) == ALL


def test_writing_mapped_tensors_releases_their_pages_and_copies_their_bytes(weights):
    m = weights._map
    w = weights.tensor("w", "float32", (5, 1024), "here")
    q = weights.tensor("q", "int4", (40960,), "here")
    _touch(m)
    out = io.BytesIO()
    write_weights(out, [("w", ConstantData("float32", (5, 1024), array=w)),
                        ("q", ConstantData("int4", (40960,), array=q))])
    assert _resident(m) == [True, False, False, False, False, True, False, False, False, False,
                            True]
    assert out.getvalue() == bytes(m)
    # A strided view (a re-laid constant) is written slice by slice, then its pages released.
    _touch(m)
    out = io.BytesIO()
    manifest = write_weights(out, [("t", ConstantData("float32", (1024, 5), array=w.T))])
    assert _resident(m) == W_RELEASED
    assert out.getvalue()[HEADER_SIZE:] == np.ascontiguousarray(FLOATS.T).tobytes()
    assert manifest["tensors"]["t"] == {"dataType": "float32", "shape": [1024, 5],
                                        "byteOffset": 8, "byteLength": 20480,
                                        "layout": "row-major"}


def test_a_strided_array_of_one_slice_is_written():
    held = np.arange(8, dtype=np.float32).reshape(2, 4)[:1, ::2]
    assert held.shape == (1, 2) and not held.flags.c_contiguous
    out = io.BytesIO()
    write_weights(out, [("s", ConstantData("float32", (1, 2), array=held))])
    assert out.getvalue()[HEADER_SIZE:] == np.array([0, 2], "<f4").tobytes()


def test_a_strided_big_endian_array_is_written_little_endian_row_major():
    held = np.arange(6, dtype=">f4").reshape(2, 3).T
    out = io.BytesIO()
    write_weights(out, [("b", ConstantData("float32", (3, 2), array=held))])
    assert out.getvalue()[HEADER_SIZE:] == \
        np.array([[0, 3], [1, 4], [2, 5]], dtype="<f4").tobytes()


def test_keys_are_checked_when_writing_and_when_reading(weights):
    with pytest.raises(WeightsError) as e:
        write_weights(io.BytesIO(), [("../x", ConstantData("float32", (1,), fill=0.0))])
    assert e.value.line() == ("weights: tensor '../x': weights key '../x' has a '.' or '..' "
                              "path component; a key is a name, never a path")
    with pytest.raises(WeightsError) as e:
        weights.tensor("/w", "float32", (5, 1024), "g.webnn: const 'w'")
    assert e.value.line() == ("g.webnn: const 'w': weights key '/w' is an absolute path; a key "
                              "is a name, never a path")


def test_a_file_holding_only_the_header_is_a_weights_file(tmp_path):
    wf = _write(tmp_path, [])
    assert (tmp_path / "m.weights").read_bytes() == b"WGWT\x01\x00\x00\x00"
    assert wf.entries == {} and len(wf._map) == HEADER_SIZE


@pytest.mark.parametrize("header, message", [
    (b"WGWX\x01\x00\x00\x00", "the file starts with b'WGWX', not b'WGWT'"),
    (b"WGWT\x02\x00\x00\x00", "weights file version 2 is not supported (only 1)")])
def test_a_refused_weights_file_is_not_left_mapped(tmp_path, header, message):
    _write(tmp_path, [])
    (tmp_path / "m.weights").write_bytes(header)
    with pytest.raises(WeightsError, match=re.escape(message)) as e:
        WeightsFile(tmp_path / "m.manifest.json", tmp_path / "m.weights")
    # The traceback (kept alive by `e`) holds the reader's frame: its mapping must be closed.
    assert e.value.__traceback__ is not None
    assert str(tmp_path / "m.weights") not in Path("/proc/self/maps").read_text()


def test_safe_key_always_gives_a_plain_name():
    assert safe_key("conv1.weight") == "conv1.weight"
    assert safe_key("C:/w") == "C_/w"
    assert safe_key("/../a\\b/./c\x00") == "_/a/b/_/c_"
    assert safe_key("") == safe_key("//") == "tensor"
    rng = random.Random(16)
    alphabet = ["/", "\\", ".", "..", ":", "C", "a", "\x00", "\x7f", "\ud800", "é", " "]
    for _ in range(2000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert key_problem(safe_key(name)) is None, repr(name)


def test_manifest_entries_cannot_change_once_checked(weights):
    # The layout checks ran on these entries when the file was opened; views are cut by them.
    entry = weights.entries["w"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.offset = 0
    assert (entry.offset, entry.length, entry.shape, entry.desc()) == \
        (8, 20480, (5, 1024), "float32[5, 1024]")


def test_a_loaded_graphs_mapped_constants_are_released_and_nothing_else(tmp_path):
    from converter import GraphBuilder
    from converter.formats import load_graph, save_graph
    from converter.formats.weights import release_constant_pages

    b = GraphBuilder("g")
    x = b.input("x", "float32", [5, 1024])
    w = b.constant(FLOATS, name="w")
    save_graph(b.build({"y": b.add(b.mul(x, w, name="m"), b.constant("float32", 2.0, name="two"),
                                   name="y")}), tmp_path / "g.webnn")
    graph = load_graph(tmp_path / "g.webnn")
    buffer = graph.constants["w"].constant.held
    while not isinstance(buffer, mmap.mmap):
        buffer = buffer.obj if isinstance(buffer, memoryview) else buffer.base
    assert len(buffer) == 8 + 20480 + 4 * (graph.constants["two"].constant.fill is None)
    _touch(buffer)
    release_constant_pages(graph)
    assert _resident(buffer) == [True, False, False, False, False, True]
    np.testing.assert_array_equal(graph.constants["w"].constant.numpy(), FLOATS)
