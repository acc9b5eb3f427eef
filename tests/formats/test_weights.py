"""The weights manifest and the WGWT weights file: reading views, writing, and rejecting."""
from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

from converter.errors import FormatError, ParseError, WeightsError
from converter.formats import load_graph
from converter.formats.weights import (WeightsFile, check_key, key_problem, manifest_text,
                                       safe_key, write_weights)
from converter.ir import ConstantData

from .conftest import edit_manifest, is_mmap_view, listing, write_weights_file

GRAPH = """webnn_graph "t" v1 {
  inputs { x: f32[8]; }
  consts { w: f32[8] @weights("w"); }
  nodes { y = add(x, w); }
  outputs { y; }
}
"""


@pytest.fixture
def weights_dir(tmp_path):
    (tmp_path / "t.webnn").write_text(GRAPH)
    write_weights_file(tmp_path, "t", {"w": np.arange(8, dtype=np.float32)})
    return tmp_path


def _fails(folder, error=WeightsError):
    before = listing(folder)
    with pytest.raises(error) as info:
        load_graph(folder / "t.webnn")
    assert listing(folder) == before
    return str(info.value)


def test_hand_written_weights_load_as_views(weights_dir):
    g = load_graph(weights_dir / "t.webnn")
    w = g.constants["w"].constant.numpy()
    assert list(w) == [0, 1, 2, 3, 4, 5, 6, 7] and w.dtype == np.float32
    assert is_mmap_view(w)


def test_offset_outside_the_weights_file(weights_dir):
    # The file is 8 + 32 = 40 bytes; a tensor at byte 16 would end at 48.
    edit_manifest(weights_dir / "t.manifest.json", "w", byteOffset=16)
    message = _fails(weights_dir)
    assert message == (f"{weights_dir / 't.manifest.json'}: tensor 'w': bytes 16..48 lie outside "
                       f"the weights file t.weights (40 bytes); the manifest and the weights "
                       f"file do not belong together")


def test_offset_inside_the_header(weights_dir):
    edit_manifest(weights_dir / "t.manifest.json", "w", byteOffset=4)
    assert "tensor 'w': byteOffset 4 is inside the 8-byte file header" in _fails(weights_dir)


def test_byte_length_that_does_not_match_the_shape(weights_dir):
    edit_manifest(weights_dir / "t.manifest.json", "w", byteLength=28)
    assert "tensor 'w': byteLength 28 does not match float32[8], which takes 32 bytes" \
        in _fails(weights_dir)


def test_wrong_magic(tmp_path):
    (tmp_path / "t.webnn").write_text(GRAPH)
    write_weights_file(tmp_path, "t", {"w": np.zeros(8, np.float32)}, magic=b"GGUF")
    assert _fails(tmp_path) == (f"{tmp_path / 't.weights'}: the file starts with b'GGUF', not "
                                f"b'WGWT'; it is not a WGWT weights file")


def test_wrong_version(tmp_path):
    (tmp_path / "t.webnn").write_text(GRAPH)
    write_weights_file(tmp_path, "t", {"w": np.zeros(8, np.float32)}, version=2)
    assert "weights file version 2 is not supported (only 1)" in _fails(tmp_path)


def test_file_shorter_than_the_header(weights_dir):
    (weights_dir / "t.weights").write_bytes(b"WGW")
    assert "the file has 3 bytes, less than the 8-byte header" in _fails(weights_dir)


def test_overlapping_tensors(tmp_path):
    (tmp_path / "t.webnn").write_text(GRAPH)
    write_weights_file(tmp_path, "t", {"w": np.zeros(8, np.float32), "v": np.zeros(2, np.float32)})
    # v sits at 40..48; moving it to 36 overlaps w (8..40) by 4 bytes.
    edit_manifest(tmp_path / "t.manifest.json", "v", byteOffset=36)
    assert "tensor 'v' (bytes 36..44) overlaps tensor 'w' (bytes 8..40)" in _fails(tmp_path)


def test_manifest_key_that_is_a_path(tmp_path):
    (tmp_path / "t.webnn").write_text(GRAPH)
    write_weights_file(tmp_path, "t", {"w": np.zeros(8, np.float32),
                                       "/etc/passwd": np.zeros(1, np.float32)})
    assert "tensor '/etc/passwd': weights key '/etc/passwd' is an absolute path" in _fails(tmp_path)


def test_tensor_larger_than_the_spec_allows_in_the_manifest(weights_dir):
    edit_manifest(weights_dir / "t.manifest.json", "w", shape=[2**31], byteLength=2**33)
    assert "tensor 'w': shape [2147483648] has 2147483648 elements, more than the spec's limit " \
           "2147483647" in _fails(weights_dir)


def test_manifest_schema_violation(weights_dir):
    edit_manifest(weights_dir / "t.manifest.json", "w", layout="column-major")
    assert "$.tensors.w.layout: 'row-major' was expected" in _fails(weights_dir,
                                                                       error=FormatError)


def test_missing_manifest_and_weights(weights_dir):
    (weights_dir / "t.weights").unlink()
    assert "t.weights: the weights file does not exist" in _fails(weights_dir)
    (weights_dir / "t.manifest.json").unlink()
    assert "t.manifest.json: the weights manifest does not exist" in _fails(weights_dir)


def test_manifest_json_syntax_error(weights_dir):
    (weights_dir / "t.manifest.json").write_text(
        '{\n  "format": "wg-weights-manifest"\n  "x": 1\n}')
    with pytest.raises(ParseError) as info:
        load_graph(weights_dir / "t.webnn")
    assert (info.value.line_no, info.value.column) == (3, 3)


def test_write_weights_streams_in_manifest_order():
    stream = io.BytesIO()
    tensors = [("a", ConstantData("float16", (3,), array=np.array([1, 2, 3], np.float16))),
               ("b", ConstantData("int64", (), fill=-2)),
               ("c", ConstantData("uint4", (3,), array=np.array([0x21, 0x03], np.uint8)))]
    manifest = write_weights(stream, tensors)
    blob = stream.getvalue()
    assert blob[:8] == b"WGWT" + struct.pack("<I", 1)
    # float16 1, 2, 3 = 0x3C00, 0x4000, 0x4200 little-endian; int64 -2; two packed uint4 bytes.
    assert blob[8:14] == bytes([0x00, 0x3C, 0x00, 0x40, 0x00, 0x42])
    assert blob[14:22] == struct.pack("<q", -2)
    assert blob[22:24] == bytes([0x21, 0x03])
    assert [(t["byteOffset"], t["byteLength"]) for t in manifest["tensors"].values()] == \
        [(8, 6), (14, 8), (22, 2)]
    assert json.loads(manifest_text(manifest)) == manifest


def test_write_weights_rejects_data_of_the_wrong_size():
    bad = ConstantData("float32", (4,), array=np.zeros(3, np.float32))
    with pytest.raises(WeightsError, match="tensor 'k': the data has 12 bytes, but "
                                           r"float32\[4\] takes 16"):
        write_weights(io.BytesIO(), [("k", bad)])


def test_weights_file_views_are_read_only_and_keep_the_mapping(weights_dir):
    wf = WeightsFile(weights_dir / "t.manifest.json", weights_dir / "t.weights")
    view = wf.tensor("w", "float32", (8,), "w")
    del wf  # the view alone keeps the mapping alive
    assert view[7] == 7.0 and not view.flags.writeable


@pytest.mark.parametrize("key, problem", [
    ("../../etc/passwd", "has a '.' or '..' path component"),
    ("/etc/passwd", "is an absolute path"),
    ("C:/Windows/x", "is an absolute path"),
    ("a\\b", "contains '\\'"),
    ("a/./b", "has a '.' or '..' path component"),
    ("a\nb", "contains a control character"),
    ("", "is empty"),
])
def test_keys_that_are_paths_are_rejected(key, problem):
    assert key_problem(key) == problem
    with pytest.raises(WeightsError, match="a key is a name, never a path"):
        check_key(key, "here")


@pytest.mark.parametrize("key", ["w", "conv1.weight", "model/conv/kernel:0", "onnx::Conv_12",
                                 "a:0"])
def test_names_are_keys(key):
    assert key_problem(key) is None and safe_key(key) == key


def test_safe_key_turns_paths_into_names():
    assert safe_key("/model/conv/w") == "model/conv/w"
    assert safe_key("..\\x/../y") == "_/x/_/y"
    assert safe_key("C:/w") == "C_/w"


def test_a_weights_file_of_just_its_header_holds_no_tensors(tmp_path):
    manifest, weights = write_weights_file(tmp_path, "t", {})
    assert weights.stat().st_size == 8
    assert WeightsFile(manifest, weights).entries == {}
